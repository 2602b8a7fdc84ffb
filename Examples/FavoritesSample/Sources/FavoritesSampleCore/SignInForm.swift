import Contracts
import FavoriteMeClient
import Foundation
import Observation

/// The sign-in screen's state: what was typed, whether it can be sent, and what to tell the user when it fails.
@MainActor @Observable
public final class SignInForm {
    public var email = ""
    public var password = ""
    public private(set) var isSigningIn = false
    /// Why the last attempt failed, in words for the user.
    public private(set) var message: String?
    private let client: FavoriteMeClient

    init(client: FavoriteMeClient) { self.client = client }

    public var canSubmit: Bool {
        !isSigningIn && email.contains("@") && password.count >= 8
    }

    /// Signs in; the app's screens follow the session (``FavoritesModel/user``), so nothing else is needed here.
    public func submit() async {
        guard canSubmit else { return }
        isSigningIn = true
        defer { isSigningIn = false }
        do {
            try await client.signIn(email: email.trimmingCharacters(in: .whitespaces), password: password)
            password = ""
            message = nil
        } catch let error as FavoriteMeError {
            message = Self.message(for: error)
        } catch {
            // Cancelled: the screen went away; nothing to say.
        }
    }

    /// The server's detail where it speaks to the user; a shorter line for the cases a sign-in screen knows.
    static func message(for error: FavoriteMeError) -> String {
        switch error.problemType {
        case .invalidCredentials?: "Wrong email or password."
        case .signInThrottled?: "Too many attempts. \(error.recoverySuggestion ?? "Try again later.")"
        default: [error.errorDescription, error.recoverySuggestion].compactMap { $0 }.joined(separator: " ")
        }
    }
}
