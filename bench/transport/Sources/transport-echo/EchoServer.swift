import RunnelUV

#if canImport(Glibc)
    import Glibc
#endif

/// Writes every line it reads back to the same connection, with its `\n`.
final class EchoDelegate: LineReaderDelegate {
    func connection(_ connection: any ByteStream, didReadLine line: UnsafeRawBufferPointer) {
        connection.writeLine(copying: line)
    }
}

/// `transport-echo [port]`: echoes lines on 127.0.0.1:port (default 7777) until SIGINT/SIGTERM.
func runEchoServer() {
    let arguments = CommandLine.arguments
    let port = arguments.count > 1 ? Int(arguments[1]) ?? 7777 : 7777
    let loop = EventLoop()
    let listener: TCPListener
    do {
        listener = try TCPListener.bind(host: "127.0.0.1", port: port, on: loop)
    } catch {
        print("bind failed: \(error)")
        exit(1)
    }
    let delegate = EchoDelegate()
    listener.onAccept = { connection in
        connection.readLines(into: delegate)
        connection.startReading()
    }
    let stop = loop.scheduler.performAsCurrent {
        loop.signals([SIGINT, SIGTERM]).subscribeNext { _ in _ = loop.shutdown() }
    }
    print("listening on 127.0.0.1:\(listener.port)")
    fflush(nil)
    let status = loop.run()
    stop.dispose()
    print("loop closed: \(status)")
}
