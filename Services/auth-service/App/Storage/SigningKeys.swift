import Contracts
import Crypto
import Foundation
import JWTKit
import Logging
import Postgres
import ServiceKit

/// The Ed25519 keys every replica signs access tokens with, shared through the `signing_keys` table.
///
/// ``refresh(now:)`` creates the next key when ``KeySchedule`` says one is due (under an advisory lock, so two
/// replicas never both create one), drops keys nothing needs any more, and reloads the rest. Each replica calls it
/// at start and then periodically; the schedule publishes a key long before it signs, so every replica and every
/// verifier knows it in time.
actor SigningKeys: VerificationKeys {
    struct LoadedKey {
        var schedule: KeySchedule.Key
        var privateKey: Curve25519.Signing.PrivateKey
    }

    let pool: DatabasePool
    let schedule: KeySchedule
    let logger: Logger
    private var loaded: [LoadedKey] = []
    private var collection = JWTKeyCollection()
    private var lastReload: ContinuousClock.Instant?

    init(pool: DatabasePool, schedule: KeySchedule, logger: Logger) {
        self.pool = pool
        self.schedule = schedule
        self.logger = logger
    }

    /// Creates a key if one is due, forgets retired ones, and reloads.
    func refresh(now: Date = Date()) async throws {
        let schedule = schedule
        let created = try await pool.withTransaction { connection -> String? in
            // Transaction-scoped: released at commit, also if this replica dies mid-way.
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext('auth.signing_keys'))")
            let keys = try await connection.query("SELECT kid, created_at, signs_from FROM signing_keys")
                .rows.map(Self.scheduled)
            for retired in schedule.retiredKeys(in: keys, now: now) {
                try await connection.query("DELETE FROM signing_keys WHERE kid = \(retired.kid)")
            }
            guard let signsFrom = schedule.nextKeySigningTime(in: keys, now: now) else { return nil }
            let key = Curve25519.Signing.PrivateKey()
            let kid = Self.makeKID(now: now)
            try await connection.query("""
                INSERT INTO signing_keys (kid, private_key, public_key, created_at, signs_from)
                VALUES (\(kid), \(key.rawRepresentation), \(key.publicKey.rawRepresentation), \(now), \(signsFrom))
                """)
            return kid
        }
        if let created { logger.notice("signing key created", metadata: ["kid": "\(created)"]) }
        try await reload()
    }

    /// Rereads the keys without creating any.
    func reload() async throws {
        let rows = try await pool.query("SELECT kid, created_at, signs_from, private_key FROM signing_keys").rows
        var keys: [LoadedKey] = []
        let collection = JWTKeyCollection()
        for row in rows {
            let schedule = try Self.scheduled(row)
            let privateKey = try Curve25519.Signing.PrivateKey(
                rawRepresentation: try row.decode(Data.self, column: "private_key"))
            keys.append(LoadedKey(schedule: schedule, privateKey: privateKey))
            await collection.add(eddsa: EdDSA.PrivateKey(backing: privateKey), kid: JWKIdentifier(string: schedule.kid),
                                 serializer: Self.serializer)
        }
        loaded = keys
        self.collection = collection
        lastReload = .now
    }

    /// Signs `claims` with the key the schedule says signs at `now`.
    func sign(_ claims: AccessTokenClaims, now: Date = Date()) async throws -> String {
        guard let key = schedule.signingKey(in: loaded.map(\.schedule), now: now) else {
            throw SigningKeyError.noSigningKey
        }
        return try await collection.sign(claims, kid: JWKIdentifier(string: key.kid))
    }

    /// The public half of every published key, as `/.well-known/jwks.json` serves it.
    func publishedKeySet(now: Date = Date()) -> JWKS {
        let published = Set(schedule.publishedKeys(in: loaded.map(\.schedule), now: now).map(\.kid))
        let keys = loaded.filter { published.contains($0.schedule.kid) }
            .sorted { $0.schedule.signsFrom < $1.schedule.signsFrom }
            .map { key in
                JWK.octetKeyPair(
                    .eddsa, identifier: JWKIdentifier(string: key.schedule.kid),
                    x: key.privateKey.publicKey.rawRepresentation.base64URLEncodedString(), y: nil, curve: .ed25519
                )
            }
        return JWKS(keys: keys)
    }

    func keys(containing kid: String) async throws -> JWTKeyCollection? {
        if loaded.contains(where: { $0.schedule.kid == kid }) { return collection }
        // Another replica may have just created it: look again, but not more than once a second.
        if let lastReload, ContinuousClock.now - lastReload < .seconds(1) { return nil }
        try await reload()
        return loaded.contains(where: { $0.schedule.kid == kid }) ? collection : nil
    }

    /// Sorted keys: the same claims always give the same bytes, so a replayed refresh returns the same token.
    static let serializer = DefaultJWTSerializer(jsonEncoder: {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .secondsSince1970
        return encoder
    }())

    /// A key's schedule from a row holding `kid, created_at, signs_from`.
    private static func scheduled(_ row: PostgresRow) throws -> KeySchedule.Key {
        KeySchedule.Key(kid: try row.decode(String.self, column: "kid"),
                        createdAt: try row.decode(Date.self, column: "created_at"),
                        signsFrom: try row.decode(Date.self, column: "signs_from"))
    }

    /// Sortable by creation, unique enough: `20261122-5f3a9c1e`.
    static func makeKID(now: Date) -> String {
        let day = now.formatted(.iso8601.year().month().day().dateSeparator(.omitted))
        return "\(day)-\(RandomBytes.data(count: 4).map { String(format: "%02x", $0) }.joined())"
    }
}

enum SigningKeyError: Error, CustomStringConvertible {
    case noSigningKey
    var description: String { "no signing key is active; the key table is empty or only holds future keys" }
}
