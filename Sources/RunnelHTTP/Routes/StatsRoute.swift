import RunnelProtocol
import RunnelServer

/// `GET /stats`: the `stats` reply's members as one object (`{"connections":N,...}`), for a
/// token that may manage, as `stats` is.
final class StatsRoute: HTTPRoute {
    let methods: [HTTPMethod] = [.get, .head]
    private unowned let server: Server

    init(server: Server) { self.server = server }

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        do throws(ProtocolError) {
            try exchange.checkedGrant.checkManage("read the server's stats")
        } catch {
            exchange.fail(HTTPFailure(error))
            return nil
        }
        server.gatherStatsReport { report in
            var object = ServerLineWriter.object()
            report.writeMembers(into: &object)
            exchange.answer(.json(object.finish()))
        }
        return nil
    }
}
