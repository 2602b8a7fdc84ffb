import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOHTTP1

/// The secret the services present to each other's peer-only routes (auth-service's feeds of revocations, deletions
/// and profile changes, which name sessions and users): the gateway hides those routes from the public, and this keeps
/// them from anyone else who reaches a service's port. `PEER_SECRET`, the same on every service.
public struct PeerSecret: Sendable {
    public static let header = HTTPField.Name("X-Peer-Secret")!
    /// The value when `PEER_SECRET` is not set: the local stack's and the tests'. A deployment sets its own (the
    /// Kubernetes manifests read it from the `favoriteme-peer` Secret).
    public static let localDefault = "favoriteme-local-peer-secret"

    private let digest: SHA256.Digest
    public let value: String

    public init(_ value: String) {
        self.value = value
        digest = SHA256.hash(data: Data(value.utf8))
    }

    /// Whether `request` carries the secret, compared in constant time (digests of equal length).
    public func isPresented(in request: Request) -> Bool {
        guard let presented = request.headers[Self.header] else { return false }
        return SHA256.hash(data: Data(presented.utf8)) == digest
    }

    /// The secret on a call to a peer.
    public func add(to headers: inout HTTPHeaders) {
        headers.add(name: Self.header.rawName, value: value)
    }

    /// A page of the peer-only feed at `url`, as JSON, with the secret: how favorites-service reads auth-service's
    /// deletions and profile changes. Any answer but 200 throws ``FeedRefused``.
    public func page<Page: Decodable>(_: Page.Type, at url: String, httpClient: HTTPClient) async throws -> Page {
        var request = HTTPClientRequest(url: url)
        add(to: &request.headers)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await httpClient.execute(request, timeout: .seconds(5))
        guard response.status == .ok else { throw FeedRefused(status: Int(response.status.code)) }
        let body = try await response.body.collect(upTo: 16 << 20)
        return try ServiceJSON.decoder.decode(Page.self, from: Data(body.readableBytesView))
    }

    /// A feed answered something other than 200.
    public struct FeedRefused: Error { public let status: Int }

    /// `date` as a feed's `since` parameter: whole seconds, as the feeds' JSON times are, rounded down (a poll then
    /// reads an entry again rather than skipping one), percent-encoded.
    public static func since(_ date: Date) -> String {
        let seconds = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
        return seconds.formatted(.iso8601).percentEncodedComponent
    }
}
