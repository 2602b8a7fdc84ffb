import AsyncHTTPClient
import Contracts
import Foundation
import HTTPTypes
import NIOHTTP1
import JWTKit
import Logging
import NIOCore

/// auth-service's public keys, fetched from its `/.well-known/jwks.json`, for services that verify tokens.
///
/// Keys are cached for `maximumAge`; a token with an unknown `kid` triggers a refetch (a key that was just rotated
/// in), but at most once per `refetchInterval`, so a flood of forged `kid`s cannot turn us into a load generator.
/// A token whose `kid` is known is answered at once, even when the set is older than `maximumAge`: the refetch then
/// runs behind it, so no request waits on auth-service for a key it already has. When auth-service cannot be
/// reached, the keys already known keep working.
public actor RemoteKeySet: VerificationKeys {
    let url: String
    let httpClient: HTTPClient
    let logger: Logger
    let maximumAge: Duration
    let refetchInterval: Duration
    let now: @Sendable () -> ContinuousClock.Instant
    private var collection = JWTKeyCollection()
    private var kids: Set<String> = []
    private var fetchedAt: ContinuousClock.Instant?
    private var attemptedAt: ContinuousClock.Instant?
    private var inFlight: Task<Void, Never>?

    /// - Parameter authURL: auth-service's base URL (`AUTH_URL`).
    public init(authURL: String, httpClient: HTTPClient, logger: Logger,
                maximumAge: Duration = .seconds(300), refetchInterval: Duration = .seconds(5),
                now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        url = authURL.trimmingSuffix("/") + "/.well-known/jwks.json"
        self.httpClient = httpClient
        self.logger = logger
        self.maximumAge = maximumAge
        self.refetchInterval = refetchInterval
        self.now = now
    }

    public func keys(containing kid: String) async throws -> JWTKeyCollection? {
        let now = now()
        let fresh = fetchedAt.map { now - $0 < maximumAge } ?? false
        let mayFetch = attemptedAt.map { now - $0 >= refetchInterval } ?? true
        if kids.contains(kid) {
            if !fresh, mayFetch, inFlight == nil {
                attemptedAt = now  // so the requests right behind this one do not start another
                Task { await self.refresh() }
            }
            return collection
        }
        if let inFlight {
            await inFlight.value  // a fetch is under way: its answer is the freshest there will be
        } else if mayFetch {
            await refresh()
        }
        if fetchedAt == nil {
            throw ServiceProblem(.serviceUnavailable, .serviceUnreachable,
                                 "The signing keys of auth-service cannot be fetched; please retry shortly.",
                                 headers: [.retryAfter: "1"])
        }
        return kids.contains(kid) ? collection : nil
    }

    /// One fetch at a time: concurrent callers wait for the same one.
    private func refresh() async {
        if let inFlight { return await inFlight.value }
        attemptedAt = now()
        let task = Task { await self.fetch() }
        inFlight = task
        await task.value
        inFlight = nil
    }

    private func fetch() async {
        do {
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await httpClient.execute(request, timeout: .seconds(2))
            guard response.status == .ok else { throw FetchError.status(Int(response.status.code)) }
            let body = try await response.body.collect(upTo: 256 * 1024)
            let keySet = try JSONDecoder().decode(JWKS.self, from: Data(body.readableBytesView))
            let collection = JWTKeyCollection()
            var kids: Set<String> = []
            for key in keySet.keys {
                // Only what auth-service issues: Ed25519 keys with a kid. Anything else in the set is ignored.
                guard key.keyType == .octetKeyPair, key.curve?.rawValue == "Ed25519", let x = key.x,
                      let kid = key.keyIdentifier?.string
                else { continue }
                await collection.add(eddsa: try EdDSA.PublicKey(x: x, curve: .ed25519), kid: JWKIdentifier(string: kid))
                kids.insert(kid)
            }
            self.collection = collection
            self.kids = kids
            fetchedAt = now()
        } catch {
            logger.warning("cannot fetch the JWKS of auth-service; keeping the keys already known",
                           metadata: ["error": "\(error)"])
        }
    }

    enum FetchError: Error { case status(Int) }
}

extension String {
    public func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
