import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOHTTP1

/// The secret the services present to each other's peer-only routes (auth-service's revocation and deletion
/// feeds, which name sessions and users): the gateway hides those routes from the public, and this keeps them from
/// anyone else who reaches a service's port. `PEER_SECRET`, the same on every service.
public struct PeerSecret: Sendable {
    public static let header = HTTPField.Name("X-Peer-Secret")!
    /// The value when `PEER_SECRET` is not set: the local stack's and the tests'. A deployment sets its own (the
    /// Kubernetes manifests read it from the `favoriteme-secrets` Secret).
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
}
