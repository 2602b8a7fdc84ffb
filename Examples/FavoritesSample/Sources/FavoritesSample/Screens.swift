#if canImport(SwiftUI)
import Contracts
import FavoriteMeClient
import FavoritesSampleCore
import SwiftUI

/// Sign-in until someone is signed in; then the search and the favorites, with the offline banner above both.
struct RootView: View {
    let app: SampleApp

    var body: some View {
        Group {
            if app.favorites.user == nil {
                SignInScreen(form: app.signIn, sessionEnded: app.favorites.sessionExpired)
            } else {
                TabView {
                    SearchScreen(search: app.search, favorites: app.favorites)
                        .tabItem { Label("Search", systemImage: "magnifyingglass") }
                    FavoritesScreen(model: app.favorites)
                        .tabItem { Label("Favorites", systemImage: "heart") }
                }
            }
        }
        .safeAreaInset(edge: .top) {
            if app.favorites.isOffline { OfflineBanner(model: app.favorites) }
        }
        .task { await app.favorites.start() }  // the session, the queue and the live changes, while the app runs
    }
}

struct SignInScreen: View {
    @Bindable var form: SignInForm
    let sessionEnded: Bool

    var body: some View {
        Form {
            if sessionEnded {
                Text("Your session ended. Sign in again.").foregroundStyle(.secondary)
            }
            TextField("Email", text: $form.email)
                .textContentType(.username)
                .autocorrectionDisabled()
            SecureField("Password", text: $form.password)
                .textContentType(.password)
            if let message = form.message {
                Text(message).foregroundStyle(.red)
            }
            Button(form.isSigningIn ? "Signing in…" : "Sign in") { Task { await form.submit() } }
                .disabled(!form.canSubmit)
        }
    }
}

struct SearchScreen: View {
    @Bindable var search: CatalogSearch
    let favorites: FavoritesModel

    var body: some View {
        NavigationStack {
            List(search.items) { item in
                ItemRow(title: item.title, subtitle: item.subtitle, hearted: favorites.hearts.contains(item.id)) {
                    Task { await favorites.toggleHeart(item.id) }
                }
            }
            .overlay {
                if let message = search.message, search.items.isEmpty {
                    ContentUnavailableView("No results", systemImage: "wifi.slash", description: Text(message))
                }
            }
            .navigationTitle("Search")
            .searchable(text: $search.text)
            .onChange(of: search.text) { search.textChanged() }
            .task { await search.search() }
        }
    }
}

struct FavoritesScreen: View {
    let model: FavoritesModel

    var body: some View {
        NavigationStack {
            List(model.favorites) { favorite in
                let hearted = model.hearts.contains(favorite.item.id)
                ItemRow(title: favorite.item.title, subtitle: favorite.item.subtitle, hearted: hearted) {
                    Task { await model.toggleHeart(favorite.item.id) }
                }
            }
            .overlay {
                if model.favorites.isEmpty {
                    ContentUnavailableView("No favorites yet", systemImage: "heart",
                                           description: Text("Heart items in Search; they show here on every device."))
                }
            }
            .navigationTitle("Favorites")
            .toolbar {
                if model.pendingWrites > 0 {  // hearts saved on the device, sent when the server can be reached
                    Text("\(model.pendingWrites) waiting").font(.caption)
                }
            }
            .refreshable { await model.sync() }
        }
    }
}

/// A cell with a heart that takes the tap (not the whole row).
struct ItemRow: View {
    let title: String
    let subtitle: String?
    let hearted: Bool
    let toggle: () -> Void

    var body: some View {
        HStack {
            VStack(alignment: .leading) {
                Text(title)
                if let subtitle { Text(subtitle).font(.subheadline).foregroundStyle(.secondary) }
            }
            Spacer()
            Button(action: toggle) {
                Image(systemName: hearted ? "heart.fill" : "heart").foregroundStyle(.red)
            }
            .buttonStyle(.borderless)
            .accessibilityLabel(hearted ? "Remove from favorites" : "Add to favorites")
        }
    }
}

/// Shown while the device is offline: the hearts still work and wait; "Try again" sends them now.
struct OfflineBanner: View {
    let model: FavoritesModel

    var body: some View {
        HStack {
            Image(systemName: "wifi.slash")
            Text(model.pendingWrites > 0 ? "Offline: \(model.pendingWrites) change(s) will be sent later" : "Offline")
            Spacer()
            Button("Try again") { Task { await model.sendNow() } }
        }
        .font(.footnote)
        .padding(8)
        .background(.orange.opacity(0.2))
    }
}
#endif
