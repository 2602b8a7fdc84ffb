import Contracts
import Foundation

/// The Rijksmuseum from its key-less data services: a search that answers with record ids only (100 a page), and
/// one Linked Art record per object, two more on the way to its image (VisualItem → DigitalObject → IIIF), and one
/// for a maker the object names only by reference.
///
/// **Search text.** The app's search bar takes a name, of a maker or of a work. The museum's search has a `creator`
/// and a `title` filter, so the text is asked of both, one after the other: first the works of makers whose name
/// matches (all of them, page after page), then the works whose title matches, less those already listed (the ids
/// of the search with both filters, up to ``overlapPages`` of them). "rembrandt" lists Rembrandt's works first;
/// "Night Watch" or "Nachtwacht" finds the painting by its title. Only objects with an image are listed. Without
/// text, the whole collection is browsed.
///
/// **Ids.** The object number (`SK-C-5`), as the museum's earlier API used, so favorites already stored stay valid;
/// a detail finds the record with an `objectNumber` search.
struct RijksmuseumSource: CatalogSource {
    let experience = ExperienceID.rijksmuseum
    let upstreams = [UpstreamName.rijksmuseumSearch, .rijksmuseumRecords]
    /// Each item of a cold page costs three or four record GETs: pages stay small.
    let maximumPageSize = Self.pageSize
    static let pageSize = 30
    /// The record GETs one object costs at most: the object, its VisualItem and DigitalObject, a maker's Person.
    static let recordsPerObject = 4
    let resolvesReferences = true
    /// How long a maker's record is kept for every replica (makers recur across objects).
    let recordLife: TimeInterval

    /// A page of ids is kept this long for every replica: later pages of results that fall in it cost no call.
    static let idPageLife: TimeInterval = 3600
    /// The search pages of the overlap between the two filters read at most (100 ids each).
    static let overlapPages = 5
    /// The upstream pages one request reads at most while collecting a page of results.
    static let pagesPerRequest = 5

    init(recordLife: TimeInterval = 7 * 86_400) {
        self.recordLife = recordLife
    }

    /// Object numbers: a 2–4 letter collection prefix and dash-separated parts of capitals and digits, with the dots
    /// and parenthesised suffixes real numbers have (`SK-C-5`, `RP-P-OB-35.976`, `RP-T-1930-54(V)`). Lower case is
    /// accepted and upper-cased, as the museum writes them.
    ///
    /// The parts are matched one by one: as one pattern repeated over all parts, a near miss made the regex engine
    /// try every way of splitting every part, which takes exponential time in the number of parts.
    func canonicalID(_ id: String) -> String? {
        let upper = id.uppercased()
        let parts = upper.split(separator: "-", omittingEmptySubsequences: false)
        guard upper.utf8.count <= 64, parts.count >= 2, parts[0].wholeMatch(of: #/[A-Z]{2,4}/#) != nil,
              parts.dropFirst().allSatisfy({ $0.wholeMatch(of: #/[A-Z0-9]+(\.[0-9]+)?(\([A-Z0-9]+\))?[A-Z0-9]*/#) != nil })
        else { return nil }
        return upper
    }

    /// Token-paged: a phase (creator, then title), the upstream's token and an offset into its page of 100.
    func isReachable(_ cursor: PageCursor) -> Bool {
        cursor.page == 0 && cursor.phase < 2 && cursor.offset < 1000 && cursor.pageSize <= maximumPageSize
    }

    // MARK: Search

    func search(_ query: SearchQuery, at cursor: PageCursor) -> SourceStep<SearchResults> {
        collect(filters: Self.phases(for: query.text), at: cursor, into: [], overlap: nil,
                pagesLeft: Self.pagesPerRequest)
    }

    /// The searches a text runs one after the other.
    static func phases(for text: String) -> [[UpstreamRequest.QueryItem]] {
        guard !text.isEmpty else { return [[]] }
        return [[.init(name: "creator", value: text)], [.init(name: "title", value: text)]]
    }

    /// Reads upstream pages from `cursor` on until `cursor.pageSize` references are collected, the searches run out,
    /// or ``pagesPerRequest`` pages were read; the next cursor points just past the last id taken.
    private func collect(filters phases: [[UpstreamRequest.QueryItem]], at cursor: PageCursor, into references: [String],
                         overlap: Set<String>?, pagesLeft: Int) -> SourceStep<SearchResults>
    {
        guard cursor.phase < phases.count else {
            return .done(SearchResults(entries: references.map(SearchEntry.reference), next: nil))
        }
        if cursor.phase > 0, overlap == nil {
            // Later searches leave out what the first one listed: the ids both filters match.
            return overlapping(phases[0] + phases[cursor.phase], token: nil, found: [], pagesLeft: Self.overlapPages)
                .then { collect(filters: phases, at: cursor, into: references, overlap: $0, pagesLeft: pagesLeft) }
        }
        return .fetch(searchRequest(phases[cursor.phase], token: cursor.token)) { answer in
            guard !answer.isNotFound else { throw UpstreamFailure.failed("status 404") }
            let page = try LinkedArt.searchPage(answer.body)
            var references = references
            var index = cursor.offset
            while index < page.recordNumbers.count, references.count < cursor.pageSize {
                let number = page.recordNumbers[index]
                index += 1
                if overlap?.contains(number) != true, !references.contains(number) { references.append(number) }
            }
            var next = PageCursor(pageSize: cursor.pageSize, phase: cursor.phase, token: cursor.token, offset: index)
            if index >= page.recordNumbers.count {
                next = page.nextPageToken.map {
                    PageCursor(pageSize: cursor.pageSize, phase: cursor.phase, token: $0)
                } ?? PageCursor(pageSize: cursor.pageSize, phase: cursor.phase + 1)
            }
            let more = next.phase < phases.count
            if references.count == cursor.pageSize || pagesLeft <= 1 || !more {
                return .done(SearchResults(entries: references.map(SearchEntry.reference), next: more ? next : nil))
            }
            return collect(filters: phases, at: next, into: references,
                           overlap: next.phase == cursor.phase ? overlap : nil, pagesLeft: pagesLeft - 1)
        }
    }

    private func overlapping(_ filters: [UpstreamRequest.QueryItem], token: String?, found: Set<String>,
                             pagesLeft: Int) -> SourceStep<Set<String>>
    {
        .fetch(searchRequest(filters, token: token)) { answer in
            guard !answer.isNotFound else { throw UpstreamFailure.failed("status 404") }
            let page = try LinkedArt.searchPage(answer.body)
            let found = found.union(page.recordNumbers)
            guard let next = page.nextPageToken, pagesLeft > 1 else { return .done(found) }
            return overlapping(filters, token: next, found: found, pagesLeft: pagesLeft - 1)
        }
    }

    func searchRequest(_ filters: [UpstreamRequest.QueryItem], token: String?) -> UpstreamRequest {
        var query = filters + [.init(name: "imageAvailable", value: "true")]
        if let token { query.append(.init(name: "pageToken", value: token)) }
        return UpstreamRequest(upstream: .rijksmuseumSearch, path: "/search/collection", query: query,
                               sharedFor: Self.idPageLife)
    }

    // MARK: Detail and records

    /// The record with this object number; the proxy resolves it (or finds it already resolved).
    func detail(id: String, known: CatalogItem?) -> SourceStep<DetailResult> {
        let request = UpstreamRequest(upstream: .rijksmuseumSearch, path: "/search/collection",
                                      query: [.init(name: "objectNumber", value: id)])
        return .fetch(request) { answer in
            guard !answer.isNotFound else { throw UpstreamFailure.failed("status 404") }
            return .done(try LinkedArt.searchPage(answer.body).recordNumbers.first.map(DetailResult.reference)
                ?? .notFound)
        }
    }

    /// An object with its image (VisualItem → DigitalObject) and, when the object names its maker only by
    /// reference, the maker's record, fetched side by side.
    func resolve(reference: String) -> SourceStep<CatalogItem?> {
        .fetch(record(reference)) { answer in
            guard !answer.isNotFound else { return .done(nil) }
            let object = try LinkedArt.object(answer.body)
            guard let number = object.objectNumber.flatMap(canonicalID) else {
                throw SourceError.malformedBody("a Rijksmuseum object without an object number")
            }
            let visual = object.visualItemNumber.map { record($0) }
            let person = object.maker == nil ? object.makerRecordNumber.map { record($0, sharedFor: recordLife) } : nil
            return .fetch([visual, person].compactMap { $0 }) { answers in
                var answers = answers[...]
                let visualAnswer = visual == nil ? nil : answers.popFirst()
                let personAnswer = person == nil ? nil : answers.popFirst()
                let maker = try personAnswer.flatMap { $0.isNotFound ? nil : try LinkedArt.person($0.body) }
                    ?? object.maker
                return image(shownBy: visualAnswer).map { item(object, number: number, maker: maker, image: $0) }
            }
        }
    }

    /// The image URL at the end of a VisualItem's chain; nil when a link is missing (an object without an image).
    private func image(shownBy visual: UpstreamAnswer?) -> SourceStep<String?> {
        guard let visual, !visual.isNotFound else { return .done(nil) }
        do {
            guard let digital = try LinkedArt.visualItem(visual.body) else { return .done(nil) }
            return .fetch(record(digital)) { answer in
                .done(answer.isNotFound ? nil : try LinkedArt.digitalObject(answer.body))
            }
        } catch {
            return .failed(error)
        }
    }

    func record(_ number: String, sharedFor: TimeInterval? = nil) -> UpstreamRequest {
        UpstreamRequest(upstream: .rijksmuseumRecords, path: "/\(number)", accept: "application/ld+json",
                        sharedFor: sharedFor)
    }

    func item(_ object: LinkedArt.ObjectRecord, number: String, maker: String?, image: String?) -> CatalogItem {
        CatalogItem(
            id: number, experience: experience, title: object.englishTitle ?? object.dutchTitle ?? number,
            subtitle: maker, imageURL: image.flatMap(Upstream.secureURL).map(SizedImage.detail),
            artwork: ArtworkFacts(
                maker: maker, plaqueDescription: object.englishDescription ?? object.dutchDescription,
                plaqueLanguage: object.englishDescription != nil ? "en" : object.dutchDescription != nil ? "nl" : nil,
                dating: object.englishDating ?? object.dutchDating
                    ?? LinkedArt.dating(fromYear: object.yearEarly, to: object.yearLate),
                year: object.yearEarly, productionPlaces: object.productionPlaces, webPage: object.webPage
            )
        )
    }

    /// A list cell: the image at a cell's size (IIIF and Google-hosted alike), no plaque text.
    func listing(of item: CatalogItem) -> CatalogItem {
        var listed = item
        listed.imageURL = item.imageURL.map(SizedImage.cell)
        listed.artwork?.plaqueDescription = nil
        listed.artwork?.plaqueLanguage = nil
        return listed
    }
}
