import Foundation

/// Waits that end early when there is reason to think a retry would now succeed: the network returned, the app came
/// to the foreground. The live changes stream waits here between reconnects; ``wakeAll()`` ends every wait at once.
actor Wakeup {
    private var sleepers: [UUID: (resume: CheckedContinuation<Void, Never>, timer: Task<Void, Never>)] = [:]
    /// How many times ``wakeAll()`` was called: a wait decided before a wake, and begun after it, does not wait.
    private(set) var wakes = 0

    /// Returns after `seconds`, or sooner when woken (since `wakes` was `since`, when given) or when the calling
    /// task is cancelled.
    func sleep(for seconds: TimeInterval, since: Int? = nil) async {
        if let since, since != wakes { return }
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                guard !Task.isCancelled else { return continuation.resume() }
                let timer = Task { [weak self] in
                    try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
                    await self?.end(id)
                }
                sleepers[id] = (continuation, timer)
            }
        } onCancel: {
            Task { await self.end(id) }
        }
    }

    /// Ends every wait under way.
    func wakeAll() {
        wakes += 1
        for id in Array(sleepers.keys) { end(id) }
    }

    private func end(_ id: UUID) {
        guard let sleeper = sleepers.removeValue(forKey: id) else { return }
        sleeper.timer.cancel()
        sleeper.resume.resume()
    }
}
