import AuthService
import CatalogProxy
import Configuration
import Contracts
import FavoritesService
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceKit
import TestSupport
import Testing

/// The published contract (`Shared/ServiceKit/openapi.json`) against the routes the services really register: a route
/// the document does not describe, or an operation no service serves, fails here.
@Suite struct RouteCoverageTests {
    /// Routes a service registers that the public API does not include, each with its reason.
    static let notPublic: [String: String] = [
        "GET /v1/auth/revocations": "peer-only feed; the gateway answers 404 on its public port",
        "GET /v1/auth/deleted-accounts": "peer-only feed; the gateway answers 404 on its public port",
        "GET /v1/auth/profile-changes": "peer-only feed; the gateway answers 404 on its public port",
    ]

    /// Documented paths the gateway rewrites before they reach a service.
    static let gatewayRewrites = ["/v1/openapi.json": "/openapi.json"]

    @Test func everyRouteIsDocumentedAndEveryDocumentedOperationIsServed() async throws {
        var served = Set<String>()
        for service in ServiceUnderTest.allCases {
            served.formUnion(try await service.routes())
        }
        // Service-local routes (`/health/*`, `/metrics`, `/openapi.json` on the service's own port) are not behind the
        // gateway, except where the gateway rewrites a documented path onto them.
        let rewritten = Set(Self.gatewayRewrites.values)
        let publicRoutes = served.filter { route in
            let path = Self.path(of: route)
            let behindGateway = path.hasPrefix("/v1/") || path.hasPrefix("/.well-known/") || rewritten.contains(path)
            return behindGateway && Self.notPublic[route] == nil
        }
        let documented = try Self.documentedOperations()

        // A route's parameter may be documented as one path per value (the catalog's experiences), so a route is
        // documented when some operation's path fits it, and an operation is served when it fits some route.
        let undocumented = publicRoutes.filter { route in !documented.contains { Self.fits($0, route) } }.sorted()
        #expect(undocumented.isEmpty, "routes missing from openapi.json: \(undocumented)")
        let unserved = documented.filter { operation in !publicRoutes.contains { Self.fits(operation, $0) } }.sorted()
        #expect(unserved.isEmpty, "operations in openapi.json that no service serves: \(unserved)")
        // The exclusions are real routes, so a renamed feed cannot slip through as "not public" forever.
        for route in Self.notPublic.keys {
            #expect(served.contains(Self.normalized(route)), "\(route) is listed as not public but is not served")
        }
    }

    @Test func everyServiceServesTheDocumentAsPublished() async throws {
        let published = try APIDocument.openAPIJSON()
        try await withTestDatabase { database in
            let reader = ServiceUnderTest.auth.configReader(databaseURL: database.connectionString)
            let app = try await AuthService.buildApplication(reader: reader)
            try await app.test(.router) { client in
                let response = try await client.execute(uri: "/openapi.json", method: .get)
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                #expect(Data(response.body.readableBytesView) == published)
                let etag = try #require(response.headers[.eTag])
                let again = try await client.execute(uri: "/openapi.json", method: .get, headers: [.ifNoneMatch: etag])
                #expect(again.status == .notModified)
            }
        }
        let document = try JSONSerialization.jsonObject(with: published) as? [String: Any]
        #expect(document?["openapi"] as? String == "3.1.0")
    }

    // MARK: - Helpers

    /// `METHOD /path` for every operation of the document, paths normalised like the services' routes.
    static func documentedOperations() throws -> Set<String> {
        let object = try JSONSerialization.jsonObject(with: APIDocument.openAPIJSON())
        let paths = try #require((object as? [String: Any])?["paths"] as? [String: [String: Any]])
        let methods = ["get", "put", "post", "delete", "patch", "head", "options"]
        var operations = Set<String>()
        for (path, item) in paths {
            let target = gatewayRewrites[path] ?? path
            for method in methods where item[method] != nil {
                operations.insert(normalized("\(method.uppercased()) \(target)"))
            }
        }
        return operations
    }

    /// Path parameters as `{}` whether written `{itemId}` (OpenAPI) or `:itemId` (Hummingbird).
    static func normalized(_ route: String) -> String {
        let parts = route.split(separator: " ", maxSplits: 1)
        let segments = parts[1].split(separator: "/", omittingEmptySubsequences: false).map { segment in
            segment.hasPrefix(":") || (segment.hasPrefix("{") && segment.hasSuffix("}")) ? "{}" : String(segment)
        }
        return "\(parts[0]) " + segments.joined(separator: "/")
    }

    /// Whether a documented operation is one the route answers: the same method, and the route's pattern matches
    /// the operation's path (a documented parameter only where the route has one).
    static func fits(_ operation: String, _ route: String) -> Bool {
        let operationParts = operation.split(separator: " ", maxSplits: 1)
        let routeParts = route.split(separator: " ", maxSplits: 1)
        return operationParts[0] == routeParts[0]
            && RouteTable.matches(routeParts[1].split(separator: "/"), operationParts[1].split(separator: "/"))
    }

    static func path(of route: String) -> String {
        String(route.split(separator: " ", maxSplits: 1)[1])
    }
}

/// Each service built as it runs in production, on a throwaway database, to read the routes it registers.
enum ServiceUnderTest: CaseIterable {
    case auth, catalog, favorites

    /// Peers are never called here; the addresses only need to be well-formed.
    func configReader(databaseURL: String) -> ConfigReader {
        let peer = "http://127.0.0.1:9"
        return testConfigReader(databaseURL: databaseURL, environment: [
            "AUTH_URL": peer, "CATALOG_URL": peer, "TICKETMASTER_URL": peer, "RIJKSMUSEUM_SEARCH_URL": peer,
            "RIJKSMUSEUM_RECORDS_URL": peer,
            "TICKETMASTER_API_KEY": "k", "BCRYPT_COST": "4",
        ])
    }

    func routes() async throws -> Set<String> {
        let table = RouteTable()
        try await withTestDatabase { database in
            let reader = configReader(databaseURL: database.connectionString)
            let app: ServiceApplication = switch self {
            case .auth: try await AuthService.buildApplication(reader: reader, routeTable: table)
            case .catalog: try await CatalogProxy.buildApplication(reader: reader, routeTable: table)
            case .favorites: try await FavoritesService.buildApplication(reader: reader, routeTable: table)
            }
            // Run it once: the application owns clients and pools that must be shut down, and a route table that is
            // filled is only worth reading if the service also starts.
            try await app.test(.router) { client in
                let live = try await client.execute(uri: "/health/live", method: .get)
                #expect(live.status == .ok)
            }
        }
        return Set(table.routes.map(RouteCoverageTests.normalized))
    }
}
