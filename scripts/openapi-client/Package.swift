// swift-tools-version:6.0
// A throwaway package (copied into .local/openapi-client by scripts/check-openapi-client) that generates a client
// from the served OpenAPI document with Apple's swift-openapi-generator and compiles it, with code that uses it.
import PackageDescription

let package = Package(
    name: "openapi-client-check",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator.git", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession.git", from: "1.4.0"),
    ],
    targets: [
        .target(
            name: "GeneratedClient",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
            ],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
    ]
)
