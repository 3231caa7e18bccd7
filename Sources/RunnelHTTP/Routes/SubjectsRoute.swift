import RunnelJSON
import RunnelServer

/// `GET /subjects?prefix=P`: the `list` reply's `subjects` array: only the subjects the
/// token may subscribe or publish to, as in `list`.
final class SubjectsRoute: HTTPRoute {
    let methods: [HTTPMethod] = [.get, .head]
    private unowned let server: Server

    init(server: Server) { self.server = server }

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        var json = JSONWriter()
        let grant = exchange.checkedGrant
        json.writeSubjectList(
            SubjectListing.list(of: server.subjects, prefix: exchange.query["prefix"] ?? "", for: grant))
        exchange.answer(.json(json.bytes))
        return nil
    }
}
