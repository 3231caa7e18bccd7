import RunnelServer

/// `GET /runnel.js`: the JavaScript client (`ClientModule`), as `text/javascript`, for pages
/// that `import` it (the dashboard does) and for Node programs that fetch it. It is code, no
/// secret, so it needs no token.
/// Thread rules: loop thread, as every route. Lifetime rule: the front door's router holds it.
final class ClientModuleRoute: HTTPRoute {
    static let path = "/runnel.js"
    let methods: [HTTPMethod] = [.get, .head]
    private let module = HTTPResponse.javascript(ClientModule.source).precompressed()

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        exchange.answer(module)
        return nil
    }
}
