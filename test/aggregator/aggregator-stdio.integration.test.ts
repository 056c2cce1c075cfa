/** taskvisor in front of taskvisor: the demo upstream is a stdio child of the aggregator. */
import { registerAggregatorScenarios } from './scenarios.js';
import { startAggregator, stdioDemoSpec } from './harness.js';
import { tempDir } from '../support/processes.js';

registerAggregatorScenarios('stdio', async () => {
  const cwd = await tempDir('taskvisor-agg-upstream-');
  const aggregator = await startAggregator([stdioDemoSpec(cwd.path)]);
  return {
    ...aggregator,
    close: async () => {
      await aggregator.close();
      await cwd.remove();
    },
  };
});
