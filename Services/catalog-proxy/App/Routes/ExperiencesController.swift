import Contracts
import Foundation
import Hummingbird
import ServiceKit

/// `GET /v1/catalog/experiences`: the experiences the app offers at sign-up and in settings. Public and static for a
/// given release, so clients and the gateway may cache it for an hour.
struct ExperiencesController {
    func register(on router: Router<AppRequestContext>) {
        router.get("/v1/catalog/experiences") { request, _ -> Response in
            try ServiceJSON.encoder.encode(ExperienceList(experiences: Experience.all))
                .conditionalJSONResponse(to: request, headers: [.cacheControl: "public, max-age=3600"])
        }
    }
}
