import Contracts
import Foundation
import HTTPTypes
import Logging
import ServiceKit

/// The sources behind the proxy, by experience. Adding a source: write its ``CatalogSource`` and add it here.
enum CatalogSources {
    static let all: [any CatalogSource] = [TicketmasterSource(), RijksmuseumSource()]
}

/// Search and detail for every source: the cache in front, the guarded upstream client behind.
struct Catalog: Sendable {
    struct Backend: Sendable {
        var source: any CatalogSource
        var client: UpstreamClient
    }

    let backends: [ExperienceID: Backend]
    let cache: ResponseCache
    let seen: SeenItems
    let searchPolicy: CachePolicy
    let detailPolicy: CachePolicy

    func backend(for experience: String) throws -> Backend {
        guard let backend = backends[ExperienceID(rawValue: experience)] else {
            throw ServiceProblem(.notFound, .notFound, "There is no experience \"\(experience)\".")
        }
        return backend
    }

    func search(_ backend: Backend, text: String, page: Int, pageSize: Int, requestID: String, logger: Logger)
        async throws -> ResponseCache.Lookup
    {
        let source = backend.source
        let key = "\(source.experience)|search|\(text.lowercased())|\(page)|\(pageSize)"
        return try await lookup(key: key, policy: searchPolicy, logger: logger) {
            let (status, body) = try await backend.client.get(
                source.searchRequest(text: text, page: page, pageSize: pageSize), requestID: requestID, logger: logger)
            // A 404 is an answer for a detail only: a search that gets one must not cache it as an empty page.
            guard (200..<300).contains(status) else { throw UpstreamFailure.failed("status \(status)") }
            let results = try Self.decode { try source.decodeSearch(body, page: page, pageSize: pageSize) }
            await seen.remember(results.items, detailed: false, logger: logger)
            let page = CatalogPage(items: results.items,
                                   nextCursor: results.hasMore
                                       ? PageCursor(page: page + 1, pageSize: pageSize).encoded : nil)
            return CachedBody(body: try ServiceJSON.encoder.encode(page))
        }
    }

    func detail(_ backend: Backend, id: String, requestID: String, logger: Logger) async throws
        -> ResponseCache.Lookup
    {
        let source = backend.source
        let seen = self.seen
        return try await lookup(key: "\(source.experience)|item|\(id)", policy: detailPolicy, logger: logger) {
            let (status, body) = try await backend.client.get(source.detailRequest(id: id), requestID: requestID,
                                                              logger: logger)
            guard !source.isNotFound(status: status, body: body),
                  let item = try Self.decode({ try source.decodeDetail(body) })
            else {
                await seen.forget(experience: source.experience, id: id, logger: logger)
                throw UpstreamFailure.notFound
            }
            await seen.remember([item], detailed: true, logger: logger)
            return CachedBody(body: try ServiceJSON.encoder.encode(item))
        } fallback: {
            // No replica's copy in this one's cache: the last copy any replica saw, in a search or a detail.
            await seen.lastCopy(experience: source.experience, id: id, logger: logger)
        }
    }

    /// The cached or loaded body for `key`; when the upstream fails (other than with "no such item") and the cache has
    /// no copy, `fallback`'s, served as stale.
    private func lookup(key: String, policy: CachePolicy, logger: Logger,
                        load: @escaping @Sendable () async throws -> CachedBody,
                        fallback: () async -> (body: CachedBody, age: Int)? = { nil }) async throws
        -> ResponseCache.Lookup
    {
        do {
            let lookup = try await cache.value(
                for: key, policy: policy, isDefinitive: { ($0 as? UpstreamFailure) == .notFound }, load: load)
            if lookup.freshness == .stale {
                logger.warning("upstream failed; serving the last good copy", metadata: ["age_seconds": "\(lookup.age)"])
            }
            return lookup
        } catch let failure as UpstreamFailure {
            if failure != .notFound {
                // Never the upstream's body: Ticketmaster echoes the API key in some of its errors.
                logger.warning("upstream request failed", metadata: ["failure": "\(failure)"])
                if let (body, age) = await fallback() {
                    logger.warning("serving the last copy seen of the item", metadata: ["age_seconds": "\(age)"])
                    return ResponseCache.Lookup(value: body, freshness: .stale, age: age, remainingTTL: 0)
                }
            }
            throw Self.problem(for: failure)
        }
    }

    private static func decode<Value>(_ body: () throws -> Value) throws -> Value {
        do { return try body() } catch is SourceError { throw UpstreamFailure.malformedBody }
    }

    /// Each upstream failure as the client sees it.
    static func problem(for failure: UpstreamFailure) -> ServiceProblem {
        func retryAfter(_ seconds: TimeInterval) -> String { String(max(1, Int(seconds.rounded(.up)))) }
        switch failure {
        case .notFound:
            return ServiceProblem(.notFound, .notFound, "The catalog has no item with this id.")
        case .rateLimited(let wait):
            return ServiceProblem(.serviceUnavailable, .upstreamRateLimited,
                                  "The catalog's request budget is spent for now; retry later.",
                                  headers: [.retryAfter: retryAfter(wait)])
        case .circuitOpen(let wait):
            return ServiceProblem(.serviceUnavailable, .upstreamUnavailable,
                                  "The catalog is failing and is given a rest; retry later.",
                                  headers: [.retryAfter: retryAfter(wait)])
        case .timeout:
            return ServiceProblem(.gatewayTimeout, .upstreamTimeout, "The catalog did not answer in time.")
        case .malformedBody:
            return ServiceProblem(.badGateway, .upstreamBadResponse, "The catalog sent a response we cannot read.")
        case .failed, .rejected:
            return ServiceProblem(.badGateway, .upstreamBadResponse, "The catalog could not be reached or failed.")
        case .quotaLedgerUnavailable:  // the database's error is in the log line of the failure
            return ServiceProblem(.serviceUnavailable, .databaseUnavailable,
                                  "The database is unavailable; please retry shortly.", headers: [.retryAfter: "1"])
        }
    }
}

/// The opaque `cursor` of catalog pages: which page comes next, in pages of which size (so the next page lines up
/// with the previous one whatever `limit` the client sends with it).
struct PageCursor: Equatable {
    var page: Int
    var pageSize: Int

    var encoded: String { Data("p:\(page):\(pageSize)".utf8).base64URLEncodedString() }

    init(page: Int, pageSize: Int) {
        self.page = page
        self.pageSize = pageSize
    }

    init?(_ text: String) {
        guard text.utf8.count <= 32, let data = Data(base64URLEncoded: text),
              let decoded = String(data: data, encoding: .utf8)
        else { return nil }
        let parts = decoded.split(separator: ":")
        guard parts.count == 3, parts[0] == "p", let page = Int(parts[1]), let pageSize = Int(parts[2]),
              page >= 0, pageSize >= 1
        else { return nil }
        self.page = page
        self.pageSize = pageSize
    }
}
