import Contracts
import Foundation

/// What serves an experience: a source asked upstream on demand, or a dataset the proxy keeps a copy of
/// (``DatasetStore``, refreshed by ``RefreshDataset``).
enum CatalogBackend: Sendable {
    case upstream(any CatalogSource)
    case dataset(any DatasetSource)

    var experience: ExperienceID {
        switch self {
        case .upstream(let source): source.experience
        case .dataset(let dataset): dataset.experience
        }
    }

    var maximumPageSize: Int {
        switch self {
        case .upstream(let source): source.maximumPageSize
        case .dataset(let dataset): dataset.maximumPageSize
        }
    }

    func canonicalID(_ id: String) -> String? {
        switch self {
        case .upstream(let source): source.canonicalID(id)
        case .dataset(let dataset): dataset.canonicalID(id)
        }
    }

    /// An item's detail as a list cell shows it (the source's list-sized image, no detail-only facts): what a
    /// favorite keeps of its item.
    func cell(of item: CatalogItem) -> CatalogItem {
        switch self {
        case .upstream(let source): source.listing(of: item)
        case .dataset(let dataset): dataset.listing(of: item)
        }
    }

    /// Datasets page by number, without a bound worth a client's while.
    func isReachable(_ cursor: PageCursor) -> Bool {
        switch self {
        case .upstream(let source):
            return source.isReachable(cursor)
        case .dataset(let dataset):
            return cursor.phase == 0 && cursor.token == nil && cursor.offset == 0
                && cursor.pageSize <= dataset.maximumPageSize && cursor.page < 100_000 / cursor.pageSize
        }
    }
}
