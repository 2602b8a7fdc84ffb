import Foundation
import OpenAPIRuntime
import OpenAPIURLSession

/// Code an app would write against the generated client: it must compile, so the generated names and shapes are the
/// ones an app gets (the problem type an open string enumeration, the experiences and a search typed).
public func journey(serverURL: URL) async throws -> [String] {
    let client = Client(serverURL: serverURL, transport: URLSessionTransport())
    let experiences = try await client.listExperiences().ok.body.json.experiences
    return experiences.map(\.id)
}

/// A problem's type: a known code, or an unknown one kept as text.
public func describe(_ type: Components.Schemas.ProblemType) -> String {
    if let known = type.value1 { return known.rawValue }
    return type.value2 ?? "unknown"
}
