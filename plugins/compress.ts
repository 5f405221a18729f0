import compress from '@fastify/compress'
import fp from 'fastify-plugin'

/**
 * Response compression (brotli or gzip, by Accept-Encoding) for the routes that opt in with the
 * route option `compress: {}`: static assets such as /widget.js. Not global: JSON answers and
 * file downloads keep their current behaviour, and request bodies are never decompressed.
 */
export default fp(
  async (app) => {
    await app.register(compress, { global: false, encodings: ['br', 'gzip'] })
  },
  { name: 'compress' },
)
