import Foundation
import Logging
import ServiceLifecycle

/// Periodic upkeep on every replica: rotates and reloads signing keys, and forgets expired sessions, revocations
/// and throttle rows. Every step is safe to run on several replicas at once.
struct AuthMaintenance: Service {
    let keys: SigningKeys
    let sessions: SessionStore
    let accounts: AccountStore
    let throttle: ThrottleStore
    let configuration: AuthConfiguration
    let logger: Logger
    var keyInterval: Duration = .seconds(30)
    /// Cleanup runs on every this many key ticks.
    var cleanupEvery = 20

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var tick = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: keyInterval)
                guard !Task.isCancelled else { return }
                tick += 1
                do {
                    try await keys.refresh()
                    if tick % cleanupEvery == 0 { try await cleanUp(now: Date()) }
                } catch {
                    logger.warning("auth maintenance failed; retrying at the next tick", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    func cleanUp(now: Date) async throws {
        let (revocations, endedSessions) = try await sessions.prune(
            revokedBefore: now.addingTimeInterval(-configuration.revocationWindow),
            // Ended or expired sessions are kept a week for the session history and reuse investigations.
            sessionsBefore: now.addingTimeInterval(-7 * 86_400)
        )
        let mailLimits = configuration.mail.limits
        let throttled = try await throttle.prune(now: now, longestWindow: max(
            ThrottlePolicy.account.window, mailLimits.perRecipientAndClient.window, mailLimits.perClient.window,
            configuration.signUpLimit.window))
        // Expired links are kept a day, so that following one says it expired rather than that it is unknown.
        let links = try await LinkTokens.prune(expiredBefore: now.addingTimeInterval(-86_400), on: accounts.pool)
        // Kept a month: long enough for any service that was down to catch up on the deletions it must act on.
        try await accounts.pruneDeletions(before: now.addingTimeInterval(-30 * 86_400))
        logger.info("auth cleanup", metadata: [
            "revocations": "\(revocations)", "sessions": "\(endedSessions)", "throttle_rows": "\(throttled)",
            "link_tokens": "\(links)",
        ])
    }
}
