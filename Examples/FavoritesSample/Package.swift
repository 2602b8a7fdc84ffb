// swift-tools-version:6.1
// An app's view of FavoriteMe Cloud: the client library and nothing else. `traits: []` turns off the package's
// default `Server` trait, so none of the server packages (Hummingbird, NIO, …) is resolved or fetched, and only the
// `Contracts` and `FavoriteMeClient` modules are built. scripts/check-sample-app checks both.
//
// Two targets: `FavoritesSampleCore`, what the app does apart from drawing (sign-in form, search, the app's client
// and models), which builds everywhere, Linux included; and `FavoritesSample`, the SwiftUI app (sign-in, search,
// hearts, favorites, live changes, an offline banner) where SwiftUI exists, a command-line run of the same core
// elsewhere. Opened in Xcode or Swift Playgrounds on a Mac, the `iOSApplication` product below makes it an iPhone
// and iPad app (AppleProductTypes exists only there; elsewhere the product is left out).
//
// A path dependency takes traits since tools version 6.1: `.package(path:traits:)` and `.package(name:path:traits:)`
// (the default, `[.defaults]`, would enable `Server`). An app outside this repository writes the same with
// `.package(url: "…/favoriteme-cloud.git", from: "…", traits: [])`.
//
// `name:` matters here: a path dependency's identity is its directory's last component (`main` in a clone named
// main), not the package's name. Naming it makes `package: "favoriteme-cloud"` below work whatever the clone's
// directory is called.
import PackageDescription
#if canImport(AppleProductTypes)
import AppleProductTypes
#endif

var products: [Product] = []
#if canImport(AppleProductTypes)
products.append(
    .iOSApplication(
        name: "FavoritesSample",
        targets: ["FavoritesSample"],
        bundleIdentifier: "com.example.FavoritesSample",
        teamIdentifier: "",
        displayVersion: "1.0",
        bundleVersion: "1",
        appIcon: .placeholder(icon: .heart),
        accentColor: .presetColor(.red),
        supportedDeviceFamilies: [.pad, .phone],
        supportedInterfaceOrientations: [.portrait, .landscapeRight, .landscapeLeft]
    )
)
#endif

let package = Package(
    name: "FavoritesSample",
    platforms: [.iOS(.v17), .macOS(.v14)],
    products: products,
    dependencies: [
        .package(name: "favoriteme-cloud", path: "../..", traits: []),
    ],
    targets: [
        .target(
            name: "FavoritesSampleCore",
            dependencies: [
                .product(name: "FavoriteMeClient", package: "favoriteme-cloud"),
                .product(name: "Contracts", package: "favoriteme-cloud"),
            ]
        ),
        .executableTarget(
            name: "FavoritesSample",
            dependencies: [
                "FavoritesSampleCore",
                .product(name: "FavoriteMeClient", package: "favoriteme-cloud"),
                .product(name: "Contracts", package: "favoriteme-cloud"),
            ]
        ),
    ]
)
