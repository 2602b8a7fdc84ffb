import Foundation
import Hummingbird

extension Request {
    /// Whether the client already holds the representation tagged `etag`: its `If-None-Match` lists that tag (weak
    /// comparison, as RFC 9110 asks for `If-None-Match`) or `*`. The caller then answers 304.
    public func ifNoneMatch(_ etag: String) -> Bool {
        let presented = headers[values: .ifNoneMatch].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        let opaque = { (tag: String) in tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag }
        return presented.contains { $0 == "*" || opaque($0) == opaque(etag) }
    }
}
