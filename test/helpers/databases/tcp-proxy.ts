import net from 'node:net'

/**
 * A TCP proxy on 127.0.0.1 in front of a PostgreSQL port, standing in for one host of a
 * formation: `retarget` points it at another server and cuts every open connection, the way a
 * switchover restarts a primary as a standby; `stop` refuses connections, a host gone.
 */
export interface TcpProxy {
  port: number
  /** connections accepted so far */
  accepted(): number
  retarget(port: number): void
  stop(): Promise<void>
}

export async function tcpProxy(targetPort: number): Promise<TcpProxy> {
  let target = targetPort
  const sockets = new Set<net.Socket>()
  let accepted = 0
  const cutAll = () => {
    for (const socket of sockets) socket.destroy()
    sockets.clear()
  }
  const server = net.createServer((client) => {
    accepted++
    const upstream = net.connect(target, '127.0.0.1')
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('error', () => undefined)
      socket.on('close', () => {
        client.destroy()
        upstream.destroy()
      })
    }
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted: () => accepted,
    retarget(port) {
      target = port
      cutAll()
    },
    stop: () =>
      new Promise<void>((resolve) => {
        cutAll()
        server.close(() => resolve())
      }),
  }
}
