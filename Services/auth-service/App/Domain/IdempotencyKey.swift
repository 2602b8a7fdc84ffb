import Crypto
import Foundation

enum IdempotencyKey {
    /// The digest an `Idempotency-Key` is stored as: SHA-256 of the request's scope (what else names the request,
    /// so the same key on another request is not mistaken for a retry of it) and the key.
    static func digest(_ key: String, scope: String) -> Data {
        Data(SHA256.hash(data: Data("\(scope) \(key)".utf8)))
    }
}
