import Locking

/// Work let in a few at a time, with a bounded line for the rest: past the line, a caller is turned away at once
/// (``Full``) rather than queued without end. Password hashing goes through two of these (see ``PasswordHasher``), so
/// a burst of sign-ups waits in its own short line, or is refused, instead of standing in front of every sign-in.
final class AdmissionQueue: Sendable {
    /// The line is full: come back in a moment.
    struct Full: Error, Equatable {}

    let concurrency: Int
    let lineLength: Int

    private struct State {
        var running = 0
        var waiting: [CheckedContinuation<Void, any Error>] = []
    }

    private let state = Locked(State())

    init(concurrency: Int, lineLength: Int) {
        precondition(concurrency > 0 && lineLength >= 0)
        self.concurrency = concurrency
        self.lineLength = lineLength
    }

    /// How many callers wait in line now.
    var waiting: Int { state.withLock { $0.waiting.count } }

    /// Whether a caller would be turned away now: for refusing work before what leads up to it is done.
    var isFull: Bool { state.withLock { $0.running >= concurrency && $0.waiting.count >= lineLength } }

    /// Runs `work` once one of the `concurrency` places is free, waiting in line for it; throws ``Full`` without
    /// running it when `lineLength` callers wait already.
    func run<Result: Sendable>(_ work: () async throws -> Result) async throws -> Result {
        try await enter()
        defer { leave() }
        return try await work()
    }

    private func enter() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let admitted = state.withLock { state -> Bool? in
                if state.running < concurrency {
                    state.running += 1
                    return true
                }
                guard state.waiting.count < lineLength else { return false }
                state.waiting.append(continuation)
                return nil  // resumed by the caller that hands over its place
            }
            switch admitted {
            case true?: continuation.resume()
            case false?: continuation.resume(throwing: Full())
            case nil: break
            }
        }
    }

    /// Hands the place to the first caller in line (it keeps the running count), or frees it.
    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if state.waiting.isEmpty {
                state.running -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
