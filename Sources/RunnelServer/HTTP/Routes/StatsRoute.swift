/// `GET /stats`: the `stats` reply's members as one object (`{"connections":N,...}`).
final class StatsRoute: HTTPRoute {
    let methods: [HTTPMethod] = [.get, .head]
    private unowned let server: Server

    init(server: Server) { self.server = server }

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        var object = ServerLineWriter.object()
        server.writeStatsMembers(into: &object)
        exchange.answer(.json(object.finish()))
        return nil
    }
}
