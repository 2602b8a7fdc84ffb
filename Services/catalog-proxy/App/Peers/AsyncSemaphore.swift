import Locking

/// Lets at most `permits` upstream calls run at once; the others wait their turn, first come first served.
///
/// Written here because none of the mirror's packages has one (swift-async-algorithms and swift-nio do not), and
/// a fan-out of record fetches from many requests needs a bound per replica. A waiter that is cancelled leaves the
/// queue and fails as a failed call.
final class AsyncSemaphore: Sendable {
    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var available: Int
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
    }

    private let state: Locked<State>

    init(permits: Int) {
        state = Locked(State(available: max(1, permits)))
    }

    func withPermit<Value>(_ body: () async throws(UpstreamFailure) -> Value) async throws(UpstreamFailure) -> Value {
        guard await acquire() else { throw .failed("cancelled while waiting for a call slot") }
        defer { release() }
        return try await body()
    }

    /// True once a permit is held; false when the task was cancelled while waiting.
    private func acquire() async -> Bool {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let granted = state.withLock { state -> Bool in
                    if state.available > 0 {
                        state.available -= 1
                        return true
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return false
                }
                if granted { continuation.resume(returning: true) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(returning: false)
        }
    }

    /// Hands the permit to the longest waiter, or returns it.
    private func release() {
        let next = state.withLock { state -> Waiter? in
            guard !state.waiters.isEmpty else {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.continuation.resume(returning: true)
    }
}
