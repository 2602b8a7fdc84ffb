import Foundation

/// The published contract of the public API: `openapi.json` at this module's root (OpenAPI 3.1), shipped as a resource of
/// this module so that every service can serve the very document the tests check the routes against.
public enum APIDocument {
    /// The document's bytes, as committed. Read once by the caller; a build without the resource bundle fails here, at
    /// start-up, rather than on the first request.
    public static func openAPIJSON() throws -> Data {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json") else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "openapi.json"])
        }
        return try Data(contentsOf: url)
    }
}
