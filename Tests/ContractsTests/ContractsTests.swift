import Contracts
import Foundation
import Testing

/// The wire format clients depend on.
@Suite struct ContractsTests {
    @Test func codesEncodeAsBareStrings() throws {
        let problem = ProblemDetails(type: .validationFailed, title: "Bad Request", status: 400, detail: "x",
                                     requestId: "r1", errors: [FieldError(field: "email", message: "is required")])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(problem), as: UTF8.self)
        #expect(json.contains(#""type":"validation-failed""#))
        #expect(try JSONDecoder().decode(ProblemDetails.self, from: Data(json.utf8)) == problem)
        let experience = try JSONDecoder().decode(ExperienceID.self, from: Data(#""rijksmuseum""#.utf8))
        #expect(experience == .rijksmuseum)
    }

    @Test func unknownExperiencesStillDecode() throws {
        let future = try JSONDecoder().decode(ExperienceID.self, from: Data(#""holograms""#.utf8))
        #expect(future.rawValue == "holograms")
        #expect(Experience.named(future) == nil)
        #expect(Experience.named(.ticketmaster)?.itemNoun == "Events")
        #expect(Set(Experience.all.map(\.id)).count == Experience.all.count)
    }
}
