import Logging
import RunnelBytes
import RunnelHTTP
import RunnelServer
import RunnelTLS
import RunnelUV

/// The daemon's TLS listeners, `tls_listen` (the line protocol) and `https_listen` (the HTTP
/// front door), and the one TLS context both make their sessions from.
///
/// Each accepted connection gets a `TLSSession` from the context current at that moment, so a
/// reload that builds a new context (the certificate, key, CA file and version floor re-read)
/// applies to the connections accepted after it, while open ones keep theirs; a reload whose
/// files do not load keeps the old context.
///
/// Thread rules: loop thread only. Lifetime rule: owned by the daemon from start to stop;
/// `close()` closes both listeners.
final class TLSListeners {
    private let servers: LoopServers
    private let logger: Logger
    private var context: TLSContext
    private(set) var lineListener: TCPListener?
    private(set) var httpListener: TCPListener?

    /// Builds the context from `config`'s files: throws when they do not load.
    init(config: ServerConfig, servers: LoopServers, logger: Logger) throws(TLSError) {
        self.servers = servers
        self.logger = logger
        context = try config.makeTLSContext(onFailure: Self.failureHandler(servers.owner))
    }

    /// Opens the configured listeners (HTTPS first, as the daemon opens HTTP first); throws
    /// when one cannot bind.
    func open(config: ServerConfig, on loop: EventLoop) throws {
        if let address = config.httpsListen {
            let listener = try TCPListener.bind(
                host: address.host, port: Int(address.port), configuration: .init(), on: loop)
            listener.makeFilter = makeSession
            servers.serveHTTP(listener)
            httpListener = listener
            logger.notice("runneld serving HTTPS on \(Self.describe(listener, address))")
        }
        if let address = config.tlsListen {
            let listener = try TCPListener.bind(
                host: address.host, port: Int(address.port), configuration: .init(maxLineLength: config.maxLineBytes),
                on: loop)
            listener.makeFilter = makeSession
            servers.serveLines(listener)
            lineListener = listener
            logger.notice("runneld listening with TLS on \(Self.describe(listener, address))")
        }
    }

    /// SIGHUP: re-reads the TLS files (whether or not their paths changed) for new
    /// connections; keeps the running context when they do not load.
    func reload(_ config: ServerConfig) {
        lineListener?.connectionConfiguration.maxLineLength = config.maxLineBytes
        do {
            context = try config.makeTLSContext(onFailure: Self.failureHandler(servers.owner))
            logger.notice("TLS certificate and key reloaded for new connections")
        } catch {
            logger.error("TLS reload failed, keeping the running certificate and key: \(error)")
        }
    }

    /// A session from the context current now, for a listener's `makeFilter`.
    private var makeSession: () throws -> any ConnectionFilter {
        { [weak self] in
            guard let self else { throw TLSError("the TLS listeners have stopped") }
            return try context.makeSession()
        }
    }

    /// Stops accepting on both listeners.
    func close() {
        lineListener?.close()
        lineListener = nil
        httpListener?.close()
        httpListener = nil
    }

    /// Counts a session's failure and logs it at debug level: a failed handshake is a
    /// client's problem (or a scanner's), not the server's, and must not flood the log.
    /// Counts every loop's failures on the first loop's server, which sums the count with the
    /// others' figures.
    private static func failureHandler(_ server: Server) -> @Sendable (String) -> Void {
        { [weak server] reason in
            guard let server else { return }
            if server.scheduler.isOnLoopThread {
                server.countTLSFailure(reason)
            } else {
                server.scheduler.schedule { [weak server] in server?.countTLSFailure(reason) }
            }
        }
    }

    private static func describe(_ listener: TCPListener, _ address: ListenAddress) -> String {
        address.isIPv6 ? "[\(listener.host)]:\(listener.port)" : "\(listener.host):\(listener.port)"
    }
}
