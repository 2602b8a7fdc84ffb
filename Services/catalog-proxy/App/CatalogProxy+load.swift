import Configuration
import Contracts
import Foundation
import Logging
import Postgres
import ServiceKit

public enum LoadError: Error, CustomStringConvertible {
    case unknownDataset(String)
    case emptyDataset

    public var description: String {
        switch self {
        case .unknownDataset(let name):
            let known = datasetSources.map(\.experience.rawValue).joined(separator: ", ")
            return "\"\(name)\" is not a dataset of catalog-proxy (\(known))"
        case .emptyDataset:
            return "the files hold no item: the dataset was left as it was"
        }
    }
}

/// The experiences `catalog-proxy load` takes.
public var loadableDatasets: [String] { datasetSources.map(\.experience.rawValue) }

/// Loads a dataset experience's items from files of its upstream's shape (the phones' list, then their images; the
/// cards), replacing what was there in one transaction: running it twice leaves the same dataset. Applies the
/// catalog schema's migrations first, as the service does at start. Returns a one-line report.
public func loadDataset(_ name: String, files: [URL], reader: ConfigReader) async throws -> String {
    guard let source = datasetSources.first(where: { $0.experience.rawValue == name }) else {
        throw LoadError.unknownDataset(name)
    }
    let items = try source.items(fromFiles: files.map { try Data(contentsOf: $0) })
    guard !items.isEmpty else { throw LoadError.emptyDataset }
    let configuration = try ServiceConfiguration(reader: reader, defaults: serviceDefaults)
    let pool = DatabasePool(connection: configuration.database, pool: PoolConfiguration(size: 1))
    var logger = Logger(label: "catalog-proxy.load")
    logger.logLevel = configuration.logLevel
    return try await pool.closing { pool in
        try await migrateWhenReachable(Migrator(schema: configuration.schema, migrations: CatalogMigrations.all),
                                       pool: pool, dryRun: configuration.migration == .check, logger: logger)
        try await DatasetStore(pool: pool).replace(source.experience, with: items,
                                                   origin: files.map(\.lastPathComponent).joined(separator: ", "),
                                                   searchableText: { source.searchableText(of: $0) })
        return "loaded \(items.count) items into the \(name) dataset"
    }
}
