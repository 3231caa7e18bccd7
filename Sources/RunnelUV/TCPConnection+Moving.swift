import CLibUV

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Moving an accepted socket to another loop: a libuv handle belongs to the loop it was made
/// on, so the socket leaves as a file descriptor (`detachSocket`) and arrives as a new
/// connection on the other loop (`adopting`).
extension TCPConnection {
    /// A duplicate of the socket's descriptor, after which this connection closes (its handle
    /// closes its own descriptor; the socket stays open through the duplicate). Only for a
    /// fresh connection that has not read or written, with no delegate. Loop thread. On a
    /// failure the connection is closed too, so the socket is never left open with no owner.
    func detachSocket() throws -> Int32 {
        loop.assertOnLoopThread()
        precondition(delegate == nil && !isReading && pendingBytes == 0, "only a fresh connection moves")
        defer { closeNow() }
        var descriptor: uv_os_fd_t = -1
        try UVError.check(uv_fileno(runnel_tcp_as_handle(handle), &descriptor), "uv_fileno")
        let duplicate = dup(descriptor)
        guard duplicate >= 0 else { throw UVError(code: -errno, operation: "dup") }
        return duplicate
    }

    /// A connection on `loop` for the connected socket `descriptor`, which it owns from now on
    /// (closed with it, or at once when this throws). Loop thread of `loop`.
    static func adopting(
        socket descriptor: Int32, on loop: LoopScheduler, configuration: Configuration
    ) throws -> TCPConnection {
        let connection: TCPConnection
        do {
            connection = try TCPConnection(loop: loop, configuration: configuration)
        } catch {
            closeDescriptor(descriptor)
            throw error
        }
        let status = uv_tcp_open(connection.handle, descriptor)
        guard status == 0 else {
            closeDescriptor(descriptor)
            connection.closeNow()
            throw UVError(code: status, operation: "uv_tcp_open")
        }
        connection.didConnect()
        return connection
    }
}

/// `close(2)`, out of reach of `TCPConnection.close()` inside the extension.
private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
