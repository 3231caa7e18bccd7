/// `GET /subjects?prefix=P`: the `list` reply's `subjects` array.
final class SubjectsRoute: HTTPRoute {
    let methods: [HTTPMethod] = [.get, .head]
    private unowned let server: Server

    init(server: Server) { self.server = server }

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        var json = JSONWriter()
        json.writeSubjectList(server.subjects.list(prefix: exchange.query["prefix"] ?? ""))
        exchange.answer(.json(json.bytes))
        return nil
    }
}
