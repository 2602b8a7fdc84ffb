import Foundation

/// Keeps the app running while `work` finishes, if the platform can: on iOS a background task, so that a refresh or
/// the sending of the queue that began in the foreground is not frozen half way when the app is sent to the
/// background (a refresh frozen after the server answered loses its answer). Elsewhere the process runs on anyway.
///
/// Injected into ``FavoriteMeClient`` (`backgroundActivity:`); the default is the platform's.
public protocol BackgroundActivity: Sendable {
    /// Runs `work`, asking the system for time to finish it (`name` is what the system shows for it).
    func run<Result: Sendable>(_ name: String, _ work: @escaping @Sendable () async -> Result) async -> Result
}

/// Runs the work as it is: a process that is not suspended in the background (macOS, Linux, a command-line tool).
public struct ForegroundActivity: BackgroundActivity {
    public init() {}

    public func run<Result: Sendable>(_ name: String, _ work: @escaping @Sendable () async -> Result) async -> Result {
        await work()
    }
}

#if canImport(UIKit) && !os(watchOS)
import UIKit

/// `UIApplication.beginBackgroundTask`: about half a minute more after the app leaves the foreground, which a refresh
/// or a send of the queue needs. The task ends when the work does, or when the system says time is up (then the work
/// may be frozen, as without it: a write frozen mid-send is sent again with its key, a refresh retried with its key).
public struct UIKitBackgroundActivity: BackgroundActivity {
    public init() {}

    public func run<Result: Sendable>(_ name: String, _ work: @escaping @Sendable () async -> Result) async -> Result {
        let task = await BackgroundTask(name)
        let result = await work()
        await task.end()
        return result
    }

    /// One background task, ended once: by the work's end or by the system's expiration handler, whichever is first.
    @MainActor private final class BackgroundTask {
        private var identifier = UIBackgroundTaskIdentifier.invalid

        init(_ name: String) {
            identifier = UIApplication.shared.beginBackgroundTask(withName: name) { [weak self] in
                MainActor.assumeIsolated { self?.end() }
            }
        }

        func end() {
            guard identifier != .invalid else { return }
            UIApplication.shared.endBackgroundTask(identifier)
            identifier = .invalid
        }
    }
}
#endif

extension FavoriteMeClient {
    /// The platform's way to finish work begun in the foreground: a background task on iOS, nothing elsewhere.
    public static var platformBackgroundActivity: any BackgroundActivity {
        #if canImport(UIKit) && !os(watchOS)
        UIKitBackgroundActivity()
        #else
        ForegroundActivity()
        #endif
    }
}
