import RunnelServer

/// `GET /`: the live dashboard page (`DashboardPage`), one document that talks to runneld over
/// `GET /ws` through the client it imports (`GET /runnel.js`). It holds no data, so it needs no
/// token.
final class IndexRoute: HTTPRoute {
    static let path = "/"
    let methods: [HTTPMethod] = [.get, .head]
    private let page = HTTPResponse.html(DashboardPage.html).precompressed()

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        exchange.answer(page)
        return nil
    }
}
