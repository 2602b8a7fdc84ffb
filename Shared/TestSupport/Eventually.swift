/// Polls `read` every 25 ms until `done` holds (up to 30 s) and returns the last value read, for the caller to assert
/// on: for what happens in the background by design (async projections, erasures, a logout reaching the other
/// services). The limit is far above any configured interval, so only a real failure reaches it.
public func eventually<Value: Sendable>(
    _ read: () async throws -> Value, until done: (Value) -> Bool
) async throws -> Value {
    let deadline = ContinuousClock.now + .seconds(30)
    var value = try await read()
    while !done(value), ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(25))
        value = try await read()
    }
    return value
}
