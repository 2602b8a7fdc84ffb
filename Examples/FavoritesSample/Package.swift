// swift-tools-version:6.1
// An app's view of FavoriteMe Cloud: the client library and nothing else. `traits: []` turns off the package's
// default `Server` trait, so none of the server packages (Hummingbird, NIO, …) is resolved or fetched, and only the
// `Contracts` and `FavoriteMeClient` modules are built. scripts/check-sample-app checks both.
//
// A path dependency takes traits since tools version 6.1: `.package(path:traits:)` and `.package(name:path:traits:)`
// (the default, `[.defaults]`, would enable `Server`). An app outside this repository writes the same with
// `.package(url: "…/favoriteme-cloud.git", from: "…", traits: [])`.
//
// `name:` matters here: a path dependency's identity is its directory's last component (`main` in a clone named
// main), not the package's name. Naming it makes `package: "favoriteme-cloud"` below work whatever the clone's
// directory is called.
import PackageDescription

let package = Package(
    name: "FavoritesSample",
    platforms: [.iOS(.v17), .macOS(.v14)],
    dependencies: [
        .package(name: "favoriteme-cloud", path: "../..", traits: []),
    ],
    targets: [
        .executableTarget(
            name: "FavoritesSample",
            dependencies: [
                .product(name: "FavoriteMeClient", package: "favoriteme-cloud"),
                .product(name: "Contracts", package: "favoriteme-cloud"),
            ]
        ),
    ]
)
