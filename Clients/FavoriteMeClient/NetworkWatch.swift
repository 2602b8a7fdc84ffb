import Foundation
#if canImport(Network)
import Network

/// Tells when the device's network returns, through the system's path monitor: the moment to send what waited and
/// to reconnect the live changes (``FavoriteMeClient/networkDidReturn()``).
final class NetworkWatch: Sendable {
    private let monitor = NWPathMonitor()
    private let queue = DispatchQueue(label: "FavoriteMeClient.NetworkWatch")

    func start(onReturn: @escaping @Sendable () -> Void) {
        // The queue serializes the handler's calls, so `wasSatisfied` is only ever touched from it.
        nonisolated(unsafe) var wasSatisfied = true
        monitor.pathUpdateHandler = { path in
            let satisfied = path.status == .satisfied
            if satisfied && !wasSatisfied { onReturn() }
            wasSatisfied = satisfied
        }
        monitor.start(queue: queue)
    }

    func stop() { monitor.cancel() }
}
#else
/// Where the system has no path monitor (Linux), the app or tool sends the queue itself
/// (``FavoriteMeClient/networkDidReturn()``).
final class NetworkWatch: Sendable {
    func start(onReturn: @escaping @Sendable () -> Void) {}
    func stop() {}
}
#endif
