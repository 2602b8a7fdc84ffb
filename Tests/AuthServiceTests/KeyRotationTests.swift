@testable import AuthService
import Contracts
import Foundation
import JWTKit
import Logging
import Postgres
import ServiceKit
import TestSupport
import Testing

/// Two replicas sharing the key table through a real database, driven through a rotation with explicit clocks.
@Suite struct KeyRotationTests {
    @Test func replicasAgreeAndANewKeyIsPublishedBeforeItSigns() async throws {
        try await withTestPool(migrators: AuthTestApp.migrators, searchPath: "auth") { pool, _ in
            let schedule = KeySchedule(rotationInterval: 1000, publishLead: 100, verificationTail: 50)
            let replicaA = SigningKeys(pool: pool, schedule: schedule, logger: Logger(label: "a"))
            let replicaB = SigningKeys(pool: pool, schedule: schedule, logger: Logger(label: "b"))
            // Whole seconds: PostgreSQL keeps microseconds, and the schedule's edges are compared exactly.
            let t0 = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            // Both start at once on an empty table: exactly one key is created.
            async let startA: Void = replicaA.refresh(now: t0)
            async let startB: Void = replicaB.refresh(now: t0)
            _ = try await (startA, startB)
            let first = await replicaA.publishedKeySet(now: t0).keys.map(\.keyIdentifier)
            #expect(first.count == 1)
            #expect(await replicaB.publishedKeySet(now: t0).keys.map(\.keyIdentifier) == first)

            // Rotation due: the new key is published, the old one still signs.
            let due = t0.addingTimeInterval(900)
            try await replicaA.refresh(now: due)
            try await replicaB.reload()
            let published = await replicaB.publishedKeySet(now: due).keys.compactMap(\.keyIdentifier?.string)
            #expect(published.count == 2)
            let newKID = try #require(published.last)
            #expect(try await kid(of: replicaB.sign(claims(at: due), now: due)) == first[0]?.string)
            // After the lead, every replica signs with the new key, and tokens of the old one still verify.
            let switched = due.addingTimeInterval(100)
            let oldToken = try await replicaA.sign(claims(at: due), now: due)
            #expect(try await kid(of: replicaA.sign(claims(at: switched), now: switched)) == newKID)
            #expect(try await replicaB.keys(containing: first[0]!.string) != nil)
            _ = try await #require(await replicaB.keys(containing: first[0]!.string))
                .verify(oldToken, as: AccessTokenClaims.self)
            // Past the tail the old key is withdrawn and deleted.
            try await replicaA.refresh(now: switched.addingTimeInterval(51))
            let remaining = try await pool.query("SELECT kid FROM signing_keys").values(String.self)
            #expect(remaining == [newKID])
        }
    }

    func claims(at date: Date) -> AccessTokenClaims {
        AccessTokenClaims(user: AuthenticatedUser(userID: UUID(), sessionID: UUID()), issuedAt: date, lifetime: 60,
                          policy: .standard)
    }

    func kid(of token: String) throws -> String? {
        let header = try #require(Data(base64URLEncoded: String(token.split(separator: ".")[0])))
        return try JSONDecoder().decode([String: String].self, from: header)["kid"]
    }
}
