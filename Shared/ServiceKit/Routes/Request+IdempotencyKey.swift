import Contracts
import Hummingbird

extension Request {
    /// The request's `Idempotency-Key`, or nil when it has none. A key out of bounds (empty, or over 200 bytes) is
    /// refused with 400 rather than ignored: a client relying on it would otherwise believe its retries were safe.
    public func idempotencyKey() throws -> String? {
        guard let key = headers[.idempotencyKey] else { return nil }
        guard (1...200).contains(key.utf8.count) else {
            throw ServiceProblem.validation([FieldError(field: "Idempotency-Key", message: "must be 1 to 200 bytes")])
        }
        return key
    }
}
