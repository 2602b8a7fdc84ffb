import Contracts
import Foundation
import Logging
import Postgres
import ServiceKit

/// `PATCH /v1/auth/me`: a new experience, preferences merged into the stored ones (a null removes a key), and/or a
/// display name (checked by the caller: ``DisplayName``). A new experience clears the default category, unless the
/// request sets one for it (``Preferences/patch(_:movingFrom:to:)``).
struct UpdateProfile: Sendable {
    let signedInAccount: SignedInAccount
    let catalog: CatalogPeer
    let pool: DatabasePool

    /// What the catalog is asked with: the caller's token and request id.
    struct CatalogCall: Sendable {
        var bearer: String
        var requestID: String
        var logger: Logger
    }

    /// `displayName`: nil leaves it, `.some(nil)` removes it.
    func callAsFunction(_ user: AuthenticatedUser, experience: ExperienceID?, preferences patch: [String: String?]?,
                        displayName: String?? = nil, call: CatalogCall) async throws -> Account {
        if let category = patch?[Preferences.defaultCategoryKey] ?? nil {
            try await checkCategory(category, experience: experience, user: user, call: call)
        }
        let userID = user.userID
        let updated = try await pool.withTransaction { connection -> Account? in
            guard let current = try await AccountStore.find(id: userID, forUpdate: true, on: connection) else { return nil }
            var preferences: [String: String]?
            if let patch = Preferences.patch(patch, movingFrom: current.experience, to: experience) {
                switch Preferences.merge(patch, into: current.preferences) {
                case .success(let merged): preferences = merged
                case .failure(let problems): throw AuthRefusal.invalidFields(problems.errors)
                }
            }
            // Only a real change counts, so devices are told of changes, not of every request.
            let changed = (experience.map { $0 != current.experience } ?? false)
                || (preferences.map { $0 != current.preferences } ?? false)
                || (displayName.map { $0 != current.displayName } ?? false)
            return try await AccountStore.update(id: userID, experience: experience, preferences: preferences,
                                                 displayName: displayName, changed: changed, now: Date(),
                                                 on: connection)
        }
        guard let updated else { throw AuthRefusal.accountGone }
        return updated
    }

    /// A default category must be one of the categories of the account's experience (the one this request sets, or
    /// the current one), as the catalog lists them now.
    private func checkCategory(_ category: String, experience: ExperienceID?, user: AuthenticatedUser,
                               call: CatalogCall) async throws {
        let target: ExperienceID
        if let experience { target = experience } else { target = try await signedInAccount(user).experience }
        guard let known = try await catalog.categories(of: target, bearer: call.bearer, requestID: call.requestID,
                                                       logger: call.logger)
        else { throw AuthRefusal.noCategories(in: target) }
        guard known.contains(where: { $0.id == category }) else {
            throw AuthRefusal.unknownCategory(category, in: target)
        }
    }
}
