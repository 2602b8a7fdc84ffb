import Foundation
import Hummingbird
import Logging
import NIOCore

/// The request context of every service: Hummingbird's core storage plus what the kit's middleware learns.
public struct AppRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The `X-Request-ID` of this request (the caller's when it sent a sane one, ours otherwise).
    public var requestID: String
    /// Bodies larger than this are refused with 413. ``ProblemMiddleware`` sets it from `HTTP_MAX_BODY_BYTES`.
    public var maxUploadSize: Int
    /// The TCP peer: the gateway in a deployment, the client when called directly.
    public var remoteAddress: SocketAddress?
    /// Set by ``AuthenticationMiddleware`` once the bearer token checks out; routes read it via
    /// ``AuthenticatedContext``, where it is not optional.
    public var identity: AuthenticatedUser?

    public init(source: Source) {
        coreContext = .init(source: source)
        requestID = ""
        maxUploadSize = 1 << 20
        remoteAddress = source.channel.remoteAddress
        identity = nil
    }
}

/// The context of routes that need a signed-in user: built from ``AppRequestContext`` after
/// ``AuthenticationMiddleware`` ran, so a handler gets `user` as a plain value and cannot forget the check.
public struct AuthenticatedContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var requestID: String
    public var maxUploadSize: Int
    public var remoteAddress: SocketAddress?
    public let user: AuthenticatedUser

    public init(context: AppRequestContext) throws {
        guard let user = context.identity else {
            // Only reachable when a route group forgot the middleware: fail closed.
            throw AuthenticationMiddleware.missingToken
        }
        coreContext = context.coreContext
        requestID = context.requestID
        maxUploadSize = context.maxUploadSize
        remoteAddress = context.remoteAddress
        self.user = user
    }
}
