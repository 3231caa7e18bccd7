import RunnelJSON
import RunnelServer

/// `GET /subjects?prefix=P`: the `list` reply's `subjects` array, by `list`'s rule
/// (`Server.listSubjects`): only the subjects the token may subscribe or publish to.
final class SubjectsRoute: HTTPRoute {
    let methods: [HTTPMethod] = [.get, .head]
    private unowned let server: Server

    init(server: Server) { self.server = server }

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        server.listSubjects(prefix: exchange.query["prefix"] ?? "", for: exchange.checkedGrant) { listings in
            var json = JSONWriter()
            json.writeSubjectList(listings)
            exchange.answer(.json(json.bytes))
        }
        return nil
    }
}
