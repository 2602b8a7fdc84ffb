#if canImport(SwiftUI)
// The sample as an iPhone, iPad or Mac app (SwiftUI): sign in, search the catalog, heart items, the favorites list
// kept live from the user's other devices, and a banner while the device is offline. Its state lives in
// FavoritesSampleCore, which builds without SwiftUI (CI builds it on Linux).
import FavoriteMeClient
import FavoritesSampleCore
import SwiftUI

@main
struct FavoritesApp: App {
    @State private var app = SampleApp(.fromEnvironment())
    @Environment(\.scenePhase) private var scenePhase

    var body: some Scene {
        WindowGroup {
            RootView(app: app)
                .task { await app.launch() }
                // Back in the foreground: what waited goes out and the live changes reconnect now, not after their
                // backoff (the network may have returned while the app was suspended). The client hears the
                // network's own return from the system's path monitor (NWPathMonitor) itself.
                .onChange(of: scenePhase) { _, phase in
                    if phase == .active { Task { await app.client.appDidBecomeActive() } }
                }
        }
    }
}
#endif
