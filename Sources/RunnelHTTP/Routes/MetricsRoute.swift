import RunnelProtocol
import RunnelServer

/// `GET /metrics`: the server's figures in the Prometheus text exposition format, version
/// 0.0.4 (`Server.gatherMetricsExposition`), for a token that may manage, as `stats` is.
final class MetricsRoute: HTTPRoute {
    static let path = "/metrics"
    let methods: [HTTPMethod] = [.get, .head]
    private unowned let server: Server

    init(server: Server) { self.server = server }

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        do throws(ProtocolError) {
            try exchange.checkedGrant.checkManage("read the server's metrics")
        } catch {
            exchange.fail(HTTPFailure(error))
            return nil
        }
        server.gatherMetricsExposition { text in
            exchange.answer(
                HTTPResponse(
                    status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8", body: Array(text.utf8)))
        }
        return nil
    }
}
