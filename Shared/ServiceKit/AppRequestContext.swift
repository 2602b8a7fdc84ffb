import Foundation
import Hummingbird
import Logging
import NIOCore

/// The request context of every service: Hummingbird's core storage plus what the kit's middleware learns.
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The `X-Request-ID` of this request (the caller's when it sent a sane one, ours otherwise).
    public var requestID: String
    /// The W3C `traceparent` to pass on to peers (the caller's, or one this request started).
    public var traceparent: String
    /// Bodies larger than this are refused with 413. ``ProblemMiddleware`` sets it from `HTTP_MAX_BODY_BYTES`.
    public var maxUploadSize: Int

    public init(source: Source) {
        coreContext = .init(source: source)
        requestID = ""
        traceparent = ""
        maxUploadSize = 1 << 20
    }
}
