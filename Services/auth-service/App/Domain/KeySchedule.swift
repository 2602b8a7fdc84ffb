import Foundation

/// When each signing key is published, signs, and is withdrawn. Every replica computes the same answer from the
/// same rows, so they agree without talking to each other.
///
/// A key is published from the moment it exists, starts signing `publishLead` later (long enough for every
/// verifier's cached JWKS to have picked it up), signs until its successor takes over, and stays published for
/// `verificationTail` after that, so the tokens it signed can still be checked until they expire.
struct KeySchedule: Sendable {
    struct Key: Sendable, Equatable {
        var kid: String
        var createdAt: Date
        var signsFrom: Date
    }

    var rotationInterval: TimeInterval
    var publishLead: TimeInterval
    var verificationTail: TimeInterval

    /// The key to sign with at `now`: the newest one whose signing time has come.
    func signingKey(in keys: [Key], now: Date) -> Key? {
        keys.filter { $0.signsFrom <= now }.max { $0.signsFrom < $1.signsFrom }
    }

    /// The keys to publish at `now`: the signing key, keys about to sign, and retired keys whose tokens may still
    /// be unexpired.
    func publishedKeys(in keys: [Key], now: Date) -> [Key] {
        keys.filter { key in
            guard let successor = successor(of: key, in: keys), successor.signsFrom <= now else { return true }
            return now < successor.signsFrom.addingTimeInterval(verificationTail)
        }
        .sorted { $0.signsFrom < $1.signsFrom }
    }

    /// Keys nothing needs any more: neither published nor signing.
    func retiredKeys(in keys: [Key], now: Date) -> [Key] {
        let published = Set(publishedKeys(in: keys, now: now).map(\.kid))
        return keys.filter { !published.contains($0.kid) }
    }

    /// When a new key should start signing, if one must be created at `now`: at once when there is none at all (a
    /// fresh install has no verifier caching an old JWKS), `publishLead` from now when the signing key is due for
    /// rotation and no successor is waiting.
    func nextKeySigningTime(in keys: [Key], now: Date) -> Date? {
        guard let current = signingKey(in: keys, now: now) else {
            return keys.contains { $0.signsFrom > now } ? nil : now
        }
        guard successor(of: current, in: keys) == nil else { return nil }
        let due = current.signsFrom.addingTimeInterval(rotationInterval - publishLead)
        return now >= due ? now.addingTimeInterval(publishLead) : nil
    }

    private func successor(of key: Key, in keys: [Key]) -> Key? {
        keys.filter { $0.signsFrom > key.signsFrom }.min { $0.signsFrom < $1.signsFrom }
    }
}
