import RunnelProtocol
import RunnelServer

/// `GET /metrics`: the server's figures in the Prometheus text exposition format, version
/// 0.0.4 (`Server.metricsExposition`), for a token that may manage, as `stats` is.
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
        exchange.answer(
            HTTPResponse(
                status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8",
                body: Array(server.metricsExposition().utf8)))
        return nil
    }
}
