import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import Locking
import Logging
import NIOCore
import Postgres

/// Turns every error into `application/problem+json`: the framework's own (unknown route, wrong method, body too
/// large), database unavailability, and anything unexpected (logged in full, answered with no internals).
public struct ProblemMiddleware: RouterMiddleware {
    public typealias Context = AppRequestContext

    let routes: RouteTable
    let maxBodyBytes: Int

    public init(routes: RouteTable, maxBodyBytes: Int) {
        self.routes = routes
        self.maxBodyBytes = maxBodyBytes
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.maxUploadSize = maxBodyBytes
        do {
            // Refuse a declared oversize body before reading any of it.
            if let length = request.headers[.contentLength].flatMap(Int.init), length > maxBodyBytes {
                throw ServiceProblem(.contentTooLarge, .payloadTooLarge, "The body exceeds \(maxBodyBytes) bytes.")
            }
            return try await next(request, context)
        } catch {
            let problem = problem(for: error, request: request, logger: context.logger)
            return problem.response(requestID: context.requestID, path: request.uri.path)
        }
    }

    func problem(for error: any Error, request: Request, logger: Logger) -> ServiceProblem {
        switch error {
        case let problem as ServiceProblem:
            return problem
        case let convertible as any ProblemConvertible:
            return convertible.problem
        case let error as PostgresError where error.isTransient:
            // The transaction was rolled back whole: nothing was applied, and the same request can simply be retried.
            logger.notice("transaction conflict; the client may retry", metadata: ["error": "\(error)"])
            return ServiceProblem(.serviceUnavailable, .databaseUnavailable,
                                  "The request met a concurrent change and was not applied; please retry.",
                                  headers: [.retryAfter: "1"])
        case let error as PostgresError where error.isValueTooLarge:
            // Input checks should have refused it first; a limit of the database's own is still the client's 400.
            logger.notice("value too large for the database", metadata: ["error": "\(error)"])
            return ServiceProblem.validation([FieldError(field: Self.field(ofIndex: error.refusingIndex),
                                                         message: "is too large to be stored; shorten it")])
        case let error as PostgresError where error.isUnavailable || error.isQueryCancelled:
            // Down, saturated, or too slow to answer within its timeouts: all "retry shortly", none a bug.
            logger.warning("database unavailable", metadata: ["error": "\(error)"])
            return ServiceProblem(.serviceUnavailable, .databaseUnavailable,
                                  "The database is unavailable; please retry shortly.", headers: [.retryAfter: "1"])
        case let error as HTTPError where error.status == .notFound:
            let allowed = routes.allowedMethods(for: request.uri.path)
            if !allowed.isEmpty {
                let list = allowed.map(\.rawValue).joined(separator: ", ")
                return ServiceProblem(.methodNotAllowed, .methodNotAllowed,
                                      "\(request.method.rawValue) is not allowed here; use \(list).",
                                      headers: [.allow: list])
            }
            return ServiceProblem(.notFound, .notFound, "No resource at \(request.uri.path).")
        case let error as HTTPError where error.status == .badRequest:
            return ServiceProblem(.badRequest, .malformedRequest, error.body ?? "The request could not be read.")
        case let error as any HTTPResponseError where error.status == .contentTooLarge:
            return ServiceProblem(.contentTooLarge, .payloadTooLarge, "The body exceeds \(maxBodyBytes) bytes.")
        case let error as any HTTPResponseError where (400..<500).contains(error.status.code):
            return ServiceProblem(error.status, ProblemType(rawValue: "http-\(error.status.code)"),
                                  error.status.reasonPhrase)
        case is CancellationError:
            return ServiceProblem(.serviceUnavailable, .internalError, "The request was cancelled.")
        default:
            // The log gets what is safe to log (with the request id); the client gets nothing internal.
            logger.error("unhandled error", metadata: Self.loggable(error))
            return ServiceProblem(.internalServerError, .internalError,
                                  "An internal error occurred; quote the request id when reporting it.")
        }
    }

    /// The request field an index is on, by our naming rule for indexes over a user's text (`favorites_by_title`:
    /// `title`); `body` when the index or column is not named so.
    static func field(ofIndex index: String?) -> String {
        guard let index, let range = index.range(of: "_by_") else { return "body" }
        return String(index[range.upperBound...])
    }

    /// An unknown error may carry anything (a password in a payload), so only its type is logged. Our own error
    /// types describe themselves without parameters or row data, so their descriptions are logged too.
    static func loggable(_ error: any Error) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["error_type": "\(type(of: error))"]
        switch error {
        case let error as PostgresError: metadata["error"] = "\(error)"
        case let error as PostgresDecodingError: metadata["error"] = "\(error)"
        case let error as MigrationError: metadata["error"] = "\(error)"
        default: break
        }
        return metadata
    }
}

/// The methods each route path answers, to tell 405 (with `Allow`) from 404. Filled once the service's routes are
/// registered; middleware has to be added before routes, so it gets this holder instead of the list.
public final class RouteTable: Sendable {
    private let patterns: Locked<[(segments: [Substring], methods: Set<HTTPRequest.Method>)]> = Locked([])

    public init() {}

    /// Records the router's routes. Call after every route is added.
    public func load(from router: Router<AppRequestContext>) {
        var grouped: [String: Set<HTTPRequest.Method>] = [:]
        for route in router.routes {
            grouped["\(route.path)", default: []].insert(route.method)
        }
        let patterns = grouped.map { path, methods in
            (segments: path.split(separator: "/"), methods: methods)
        }
        self.patterns.withLock { $0 = patterns }
    }

    /// Every route as `METHOD /path`, with parameters as Hummingbird writes them (`/v1/favorites/:experience`).
    public var routes: [String] {
        patterns.withLock { patterns in
            patterns.flatMap { pattern in
                pattern.methods.map { "\($0.rawValue) /" + pattern.segments.joined(separator: "/") }
            }
        }.sorted()
    }

    /// The methods routes matching `path` answer (HEAD wherever GET is, as the router answers it); empty when no
    /// route matches.
    public func allowedMethods(for path: String) -> [HTTPRequest.Method] {
        let segments = path.split(separator: "/")
        var methods = Set(patterns.withLock { patterns in
            patterns.filter { Self.matches($0.segments, segments) }.flatMap(\.methods)
        })
        if methods.contains(.get) { methods.insert(.head) }
        return methods.sorted { $0.rawValue < $1.rawValue }
    }

    /// Whether a route's pattern (parameters as `:name` or `{name}`, `*`, a trailing `**`) matches a path.
    public static func matches(_ pattern: [Substring], _ path: [Substring]) -> Bool {
        for (index, element) in pattern.enumerated() {
            if element == "**" { return true }
            guard index < path.count else { return false }
            if element == "*" || element.hasPrefix(":") || element.hasPrefix("{") { continue }
            if element != path[index] { return false }
        }
        return pattern.count == path.count
    }
}
