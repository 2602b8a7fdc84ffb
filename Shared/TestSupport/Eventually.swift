/// Polls `read` every 200 ms until `done` holds (up to 30 s) and returns the last value read, for the caller to assert
/// on: for what happens in the background by design (async projections, erasures, a logout reaching the other
/// services). The limit is far above any configured interval, so only a real failure reaches it.
public func eventually<Value: Sendable>(
    _ read: () async throws -> Value, until done: (Value) -> Bool
) async throws -> Value {
    var value = try await read()
    for _ in 0..<150 where !done(value) {
        try await Task.sleep(for: .milliseconds(200))
        value = try await read()
    }
    return value
}
