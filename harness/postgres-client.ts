import pg from 'pg'

/** One short-lived PostgreSQL connection for `work`, closed whatever happens (the replay wait, the bench's set-up). */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 })
  client.on('error', () => {}) // a dropped connection surfaces on the next query
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}
