import AsyncHTTPClient
import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import Locking
import Logging
import NIOCore
import ServiceKit
import TestSupport
import Testing

/// The JWKS cache of services that verify tokens, against a stand-in key server whose keys change.
@Suite struct RemoteKeySetTests {
    final class KeyServer: Sendable {
        let keys = Locked<[(kid: String, key: EdDSA.PrivateKey)]>([])
        let fetches = Locked(0)

        func add(_ kid: String) -> EdDSA.PrivateKey {
            let key = try! EdDSA.PrivateKey()
            keys.withLock { $0.append((kid, key)) }
            return key
        }

        var router: Router<BasicRequestContext> {
            let router = Router()
            router.get(".well-known/jwks.json") { _, _ -> Response in
                self.fetches.withLock { $0 += 1 }
                let set = JWKS(keys: self.keys.withLock { $0 }.map { entry in
                    JWK.octetKeyPair(.eddsa, identifier: JWKIdentifier(string: entry.kid),
                                     x: entry.key.publicKey.rawRepresentation.base64URLEncodedString(), y: nil,
                                     curve: .ed25519)
                })
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(set))))
            }
            return router
        }
    }

    /// A clock the test moves by hand.
    final class ManualClock: Sendable {
        private let current = Locked(ContinuousClock.now)
        var now: ContinuousClock.Instant { current.withLock { $0 } }
        func advance(_ duration: Duration) { current.withLock { $0 += duration } }
    }

    /// A key server holding the key "first", and a key set (cached 300 s, refetched at most every 5 s) on a clock the
    /// test moves.
    static func withKeySet(_ test: @escaping @Sendable (KeyServer, ManualClock, RemoteKeySet) async throws -> Void) async throws {
        let server = KeyServer()
        _ = server.add("first")
        try await Application(router: server.router).test(.live) { client in
            let clock = ManualClock()
            let keySet = RemoteKeySet(authURL: "http://127.0.0.1:\(client.port!)", httpClient: .shared,
                                      logger: Logger(label: "test"), maximumAge: .seconds(300),
                                      refetchInterval: .seconds(5), now: { clock.now })
            try await test(server, clock, keySet)
        }
    }

    @Test func unknownKIDsTriggerARefetchButNotAFlood() async throws {
        try await Self.withKeySet { server, clock, keySet in
            #expect(try await keySet.keys(containing: "first") != nil)
            #expect(try await keySet.keys(containing: "first") != nil)
            #expect(server.fetches.withLock { $0 } == 1)  // cached

            // A forged kid: one refetch, then no more until the interval passes.
            clock.advance(.seconds(6))
            #expect(try await keySet.keys(containing: "forged") == nil)
            #expect(try await keySet.keys(containing: "forged-again") == nil)
            #expect(server.fetches.withLock { $0 } == 2)

            // auth-service rotates in a key: a token signed with it is accepted after one refetch.
            let second = server.add("second")
            clock.advance(.seconds(6))
            let collection = try #require(try await keySet.keys(containing: "second"))
            let signer = JWTKeyCollection()
            await signer.add(eddsa: second, kid: "second")
            let claims = AccessTokenClaims(user: AuthenticatedUser(userID: UUID(), sessionID: UUID()), issuedAt: Date(),
                                           lifetime: 60, policy: .standard)
            let token = try await signer.sign(claims, kid: "second")
            #expect(try await collection.verify(token, as: AccessTokenClaims.self) == claims)
            #expect(server.fetches.withLock { $0 } == 3)
        }
    }

    /// A key the set holds is answered at once when the set is stale, and the refetch runs behind the request.
    @Test func aStaleSetAnswersForAKnownKeyAndRefreshesBehindIt() async throws {
        try await Self.withKeySet { server, clock, keySet in
            #expect(try await keySet.keys(containing: "first") != nil)
            // auth-service retires "first" in favour of "second"; the cached set is past its age.
            server.keys.withLock { $0.removeAll() }
            _ = server.add("second")
            clock.advance(.seconds(301))
            #expect(try await keySet.keys(containing: "first") != nil)  // from the stale set, without waiting
            // The refetch it started behind itself brings the new set.
            let refreshed = try await eventually({ server.fetches.withLock { $0 } }) { $0 == 2 }
            #expect(refreshed == 2)
            clock.advance(.seconds(1))
            let second = try await eventually({ try await keySet.keys(containing: "second") != nil }) { $0 }
            #expect(second)
            #expect(try await keySet.keys(containing: "first") == nil)
        }
    }

    @Test func anUnreachableKeyServerIsA503NotA401() async throws {
        let keySet = RemoteKeySet(authURL: "http://127.0.0.1:1", httpClient: .shared, logger: Logger(label: "test"))
        await #expect(throws: ServiceProblem.self) { try await keySet.keys(containing: "any") }
    }
}
