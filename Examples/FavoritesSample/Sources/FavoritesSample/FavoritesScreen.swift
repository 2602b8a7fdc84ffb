#if canImport(SwiftUI)
// The favorites screen of an iOS or macOS app, bound to the library's observable model (Apple platforms only: Linux
// has no SwiftUI and skips this file). The app owns the model (e.g. in its App's @State) and passes it in:
//
//     FavoritesScreen(model: FavoritesModel(client: client, experience: .rijksmuseum))
import Contracts
import FavoriteMeClient
import SwiftUI

@MainActor
struct FavoritesScreen: View {
    let model: FavoritesModel

    var body: some View {
        NavigationStack {
            List {
                if let error = model.lastError {
                    Text(error.description).font(.footnote).foregroundStyle(.red)
                }
                ForEach(model.favorites, id: \.itemId) { favorite in
                    HStack {
                        VStack(alignment: .leading) {
                            Text(favorite.title)
                            if let subtitle = favorite.subtitle {
                                Text(subtitle).font(.subheadline).foregroundStyle(.secondary)
                            }
                        }
                        Spacer()
                        let hearted = model.hearts.contains(favorite.itemId)
                        Button {
                            Task { await model.toggleHeart(favorite.itemId) }
                        } label: {
                            Image(systemName: hearted ? "heart.fill" : "heart").foregroundStyle(.red)
                        }
                        .buttonStyle(.borderless)  // only the heart takes the tap, not the whole row
                        .accessibilityLabel(hearted ? "Remove from favorites" : "Add to favorites")
                    }
                }
            }
            .navigationTitle("Favorites")
            .toolbar {
                ToolbarItem {
                    if model.pendingWrites > 0 {  // writes made offline, sent when the server can be reached
                        Text("\(model.pendingWrites) waiting")
                            .font(.caption).padding(.horizontal, 8).padding(.vertical, 2)
                            .background(Color.orange.opacity(0.25), in: Capsule())
                    }
                }
            }
            .refreshable { await model.sync() }
            .task { await model.start() }  // follows the session and the queue until the view goes away
            .sheet(isPresented: .constant(model.user == nil || model.sessionExpired)) {
                // Placeholder: the app's sign-in form goes here (client.signIn); the model sees the new session.
                Text("Sign in to see your favorites").padding().interactiveDismissDisabled()
            }
        }
    }
}
#endif
