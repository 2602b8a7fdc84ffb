import Contracts
import Foundation
import HummingbirdTesting
import NIOCore
import ServiceKit

extension TestResponse {
    /// The body decoded the way the services encode it.
    public func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try ServiceJSON.decoder.decode(type, from: Data(body.readableBytesView))
    }

    /// The body as a problem document, if it is one.
    public var problem: ProblemDetails? { try? decode(ProblemDetails.self) }
}
