import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), '..')
export const ROOT = join(BENCH_DIR, '..')
export const RESULTS_DIR = join(BENCH_DIR, 'results')
