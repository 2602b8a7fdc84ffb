import Contracts
import Foundation

/// What happened to the device's session: the sequence an app's root screen follows (``FavoriteMeClient/authEvents()``).
public enum AuthEvent: Sendable, Hashable {
    /// A user is signed in: by sign-in or sign-up, or a stored session opened at launch.
    case signedIn(UserProfile)
    /// The session goes on: its tokens were renewed, or the user's profile was read again.
    case refreshed(UserProfile)
    /// Signed out on this device (by the app).
    case signedOut
    /// The server ended the session (signed out elsewhere, expired, a reused refresh token): that user's synced
    /// copy is gone from the device, their waiting writes are kept for their next sign-in. Show the sign-in screen.
    case sessionExpired(UserProfile)
}

/// What happened to the device's copy of the favorites and its queue (``FavoriteMeClient/localEvents()``).
public enum LocalEvent: Sendable, Hashable {
    /// The hearts, the synced copy or the queue changed: read them again.
    case changed
    /// The server refused a queued write for good: it left the queue and its heart rolled back (`problem.detail`
    /// says why). The only way a heart is ever taken back: a write that fails on the way waits and is sent again.
    case refused(PendingWrite, APIProblem)
    /// A document on the device could not be read (damaged, or from a newer version): it was moved aside, kept,
    /// and the client goes on with an empty one.
    case setAside(LocalDocument, path: String, reason: String)
    /// Saving a document failed after the server had applied a write (the device is full, say). Nothing is lost:
    /// the next save writes it, and a write still waiting on disk is sent again with its key.
    case saveFailed(LocalDocument, reason: String)
}

/// Hands each event to every current subscriber. A subscriber that falls behind keeps the newest events only: events
/// say what to read again, so a skipped one costs nothing.
actor Broadcast<Element: Sendable> {
    private var subscribers: [UUID: AsyncStream<Element>.Continuation] = [:]

    func subscribe(startingWith first: Element? = nil) -> AsyncStream<Element> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(64))
        if let first { continuation.yield(first) }
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(id) } }
        return stream
    }

    func send(_ element: Element) {
        for continuation in subscribers.values { continuation.yield(element) }
    }

    private func unsubscribe(_ id: UUID) { subscribers[id] = nil }
}
