import { Type } from '@sinclair/typebox'
import { Uuid } from './common.js'

/** Shapes of GET /widget.js and the development demo (src/widget/, src/demo/). */

export const WidgetQuery = Type.Object(
  {
    /** The build's content hash: `/widget.js?v=<hash>` is cached for a year. */
    v: Type.Optional(Type.String({ pattern: '^[0-9a-f]{1,64}$' })),
  },
  { additionalProperties: false },
)

/** Sent as the bytes of the bundle (a Buffer), described as a string in the OpenAPI document. */
export const JavaScript = Type.Unsafe<string | Buffer>({ type: 'string', description: 'A script (text/javascript)' })
export const Html = Type.String({ description: 'An HTML page' })

export const DemoShopQuery = Type.Object(
  {
    channelId: Uuid,
    channelToken: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,200}$' })),
  },
  { additionalProperties: false },
)
