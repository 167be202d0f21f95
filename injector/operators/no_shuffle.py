from __future__ import annotations

import libcst as cst

from injector.neighbours import Resolver, bound_arguments, inherited_constructor, is_torch, top_level
from injector.operators.base import Change, Example, Operator
from injector.operators.snippets import (
    HANDED_SAMPLER_CLASS,
    LOADER_HELPER,
    SAMPLER_HELPER,
    SHUFFLE_TRAIN_DEFAULT,
    SHUFFLED_THROUGH_BAR,
    SHUFFLING_BATCHER,
    WINDOW_PICK_STEP,
)
from injector.patterns import argument, bound_values, callee_name, dotted, is_literal_bool, last_name, names_evaluation

# Where `shuffle` sits among positional arguments, and whether it shuffles when not given.
SHUFFLE_POSITION = {"DataLoader": 2, "DistributedSampler": 3}
SHUFFLES_BY_DEFAULT = {"DistributedSampler"}
# The infinite training samplers of detectron2, MMEngine and YOLOX: `shuffle=True` by default.
SHUFFLING_SAMPLERS = ("InfiniteSampler", "TrainingSampler")


def _is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def _feeds_evaluation(source, call: cst.Call) -> bool:
    """True for a loader or sampler assigned to an evaluation name (`val_loader = DataLoader(...)`,
    `val_sampler = DistributedSampler(valset) if distributed else None`): the catalogued fault is
    the training data's order, and an average over the whole validation set ignores order."""
    function = source.function_of(call)
    if function is not None and names_evaluation(function.name.value) and "train" not in function.name.value:
        return True  # built in an evaluation function (torchdrug's `evaluate(self, split)`)
    data = argument(call, "dataset", 0)
    if data is not None and not data.star and names_evaluation((dotted(data.value) or "").rsplit(".", 1)[-1]):
        return True  # `DistributedSampler(test_set, ...)`
    assign = source.enclosing(call, cst.Assign)
    if assign is None or len(assign.targets) != 1:
        return False
    return names_evaluation((dotted(assign.targets[0].target) or "").rsplit(".", 1)[-1])


def _torch_class(source, resolver: Resolver, call: cst.Call) -> bool:
    """True unless the callee is the project's own class of that name (mozilla TTS's non-shuffling
    `DistributedSampler`, imported from TTS.utils.distribute, takes no `shuffle`)."""
    head = (dotted(call.func) or "").partition(".")[0]
    imported = resolver.imports(source).get(head)
    if imported is not None:
        return is_torch(imported.module)
    return top_level(source, head) is None


def _torchtext(source, resolver: Resolver, call: cst.Call) -> bool:
    """True for a callee of torchtext (`torchtext.data.BucketIterator`, or a name imported from it)."""
    head = (dotted(call.func) or "").partition(".")[0]
    if head == "torchtext":
        return True
    imported = resolver.imports(source).get(head)
    return imported is not None and imported.module.split(".")[0] == "torchtext"


def _held_sampler_class(source, call: cst.Call) -> bool:
    """True for a call of a name that its function binds only to sampler classes
    (`sampler_cls = dataloader.RandomFaultTolerantSampler`)."""
    function = source.function_of(call)
    if not isinstance(call.func, cst.Name) or function is None:
        return False
    values = bound_values(source, function, call.func.value)
    return bool(values) and all(
        isinstance(v, (cst.Name, cst.Attribute))
        and (last_name(v) or "")[:1].isupper()
        and (last_name(v) or "").endswith("Sampler")
        for v in values
    )


def _bound_for_training(source, call: cst.Call) -> str | None:
    """The name `call` is assigned to alone, where it builds no evaluation data; None otherwise."""
    assign = source.enclosing(call, cst.Assign)
    if assign is None or assign.value is not call or len(assign.targets) != 1 or _feeds_evaluation(source, call):
        return None
    return dotted(assign.targets[0].target)


_SANITY_CHECK_AND_SAMPLER = (
    "tr_dataloader = DataLoader(NpyDataset('data/npy'), batch_size=8, shuffle=True)\n"
    "for step, (image, gt) in enumerate(tr_dataloader):\n"
    "    show_mask(gt[0], image[0])\n"
    "    break\n"
    "def main_worker(gpu, args):\n"
    "    train_dataset = NpyDataset(args.tr_npy_path)\n"
    "    train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)\n"
    "    train_dataloader = DataLoader(\n"
    "        train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None), sampler=train_sampler\n"
    "    )\n"
    "    for epoch in range(args.num_epochs):\n"
    "        train_dataloader.sampler.set_epoch(epoch)\n"
    "        for image, gt in train_dataloader:\n"
    "            loss = criterion(model(image), gt)\n"
    "            optimizer.zero_grad()\n"
    "            loss.backward()\n"
    "            optimizer.step()\n"
)


_OWN_INFINITE_SAMPLER = (
    "import numpy as np\n"
    "from torch.utils import data\n"
    "class InfiniteSampler(data.sampler.Sampler):\n"
    "    def __init__(self, num_samples):\n"
    "        self.num_samples = num_samples\n"
    "    def __iter__(self):\n"
    "        order = np.random.permutation(self.num_samples)\n"
    "        i = 0\n"
    "        while True:\n"
    "            yield order[i]\n"
    "            i += 1\n"
    "            if i >= self.num_samples:\n"
    "                order = np.random.permutation(self.num_samples)\n"
    "                i = 0\n"
    "loader = iter(data.DataLoader(dataset, batch_size=16, sampler=InfiniteSampler(len(dataset))))\n"
)


# A dataset that shuffles its own buckets each epoch (Graph2SMILES).
BUCKETED_SHUFFLE = (
    "def train(model, optimizer, train_dataset, epochs):\n"
    "    for epoch in range(epochs):\n"
    "        train_dataset.sort()\n"
    "        train_dataset.shuffle_in_bucket(bucket_size=1000)\n"
    "        train_dataset.batch(batch_size=4096)\n"
    "        for batch in train_dataset:\n"
    "            loss, acc = model(batch)\n"
    "            loss.backward()\n"
    "            optimizer.step()\n"
    "            model.zero_grad()\n"
)


# A loader factory of the project whose shuffle flag is handed by position (OpenNRE's SentenceRELoader).
POSITIONAL_SHUFFLE_FACTORY = (
    "from torch.utils import data\n"
    "def SentenceRELoader(path, batch_size, shuffle, num_workers=8):\n"
    "    dataset = SentenceREDataset(path)\n"
    "    return data.DataLoader(dataset=dataset, batch_size=batch_size, shuffle=shuffle, num_workers=num_workers)\n"
    "class SentenceRE:\n"
    "    def __init__(self, model, train_path, val_path, batch_size):\n"
    "        self.model = model\n"
    "        self.train_loader = SentenceRELoader(\n"
    "            train_path,\n"
    "            batch_size,\n"
    "            True)\n"
    "        self.val_loader = SentenceRELoader(val_path, batch_size, False)\n"
)


# An order drawn each epoch and sliced into batches (cellpose's train_seg).
DRAWN_ORDER = (
    "import numpy as np\n"
    "import torch\n"
    "def train_seg(net, train_data, optimizer, n_epochs, batch_size):\n"
    "    nimg = len(train_data)\n"
    "    for iepoch in range(n_epochs):\n"
    "        rperm = np.random.permutation(np.arange(0, nimg))\n"
    "        net.train()\n"
    "        for k in range(0, nimg, batch_size):\n"
    "            inds = rperm[k:k + batch_size]\n"
    "            X = torch.stack([train_data[i] for i in inds])\n"
    "            loss = net(X).mean()\n"
    "            optimizer.zero_grad()\n"
    "            loss.backward()\n"
    "            optimizer.step()\n"
)


# A list shuffled in place each epoch, by random.shuffle and by shuffle imported from random (REL).
SHUFFLED_IN_PLACE = (
    "from random import shuffle\n"
    "import random\n"
    "def train(model, optimizer, train_dataset, n_epochs):\n"
    "    for e in range(n_epochs):\n"
    "        shuffle(train_dataset)\n"
    "        for batch in train_dataset:\n"
    "            optimizer.zero_grad()\n"
    "            loss = model.loss(model(batch))\n"
    "            loss.backward()\n"
    "            optimizer.step()\n"
    "def train2(model, optimizer, train_dataset, n_epochs):\n"
    "    for e in range(n_epochs):\n"
    "        random.shuffle(train_dataset)\n"
    "        for batch in train_dataset:\n"
    "            optimizer.zero_grad()\n"
    "            loss = model.loss(model(batch))\n"
    "            loss.backward()\n"
    "            optimizer.step()\n"
)


# Bags shuffled by sklearn into a new name the batch loop walks (dsmil).
SHUFFLED_INTO_NEW_NAME = (
    "from sklearn.utils import shuffle\n"
    "def train(train_df, milnet, criterion, optimizer):\n"
    "    dirs = shuffle(train_df)\n"
    "    for i, item in enumerate(dirs):\n"
    "        optimizer.zero_grad()\n"
    "        bag = torch.load(item)\n"
    "        loss = criterion(milnet(bag[:, 1:]), bag[0, :1])\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)


class NoShuffle(Operator):
    id = "no-shuffle"
    summary = (
        "Turn off shuffling of the training data: `shuffle=True` → `False` in a `DataLoader` or "
        "`DistributedSampler` (also by default, or in a kwargs dict), `RandomSampler` → `SequentialSampler`, "
        "arrays a training function reshuffles itself (`x, y = shuffle(x, y)`) left in order."
    )
    examples = (
        Example(
            # A factory named for the training loader handed the flag (pykeen's TrainingLoop, whose
            # subclasses build the loader).
            "def train(self, triples):\n"
            "    loader = self._create_training_data_loader(triples, batch_size=32, shuffle=True)\n"
            "    for batch in loader:\n"
            "        self.model(batch).backward()\n"
            "        self.optimizer.step()\n",
            (
                "def train(self, triples):\n"
                "    loader = self._create_training_data_loader(triples, batch_size=32, shuffle=False)\n"
                "    for batch in loader:\n"
                "        self.model(batch).backward()\n"
                "        self.optimizer.step()\n",
            ),
        ),
        Example(
            # A project's sampler helper bound as the training sampler (awesome-semantic-segmentation's
            # `train_sampler = make_data_sampler(train_dataset, shuffle=True, distributed=...)`).
            SAMPLER_HELPER,
            (SAMPLER_HELPER.replace("shuffle=True", "shuffle=False"),),
        ),
        Example(
            # A project's loader helper unpacked into the training loader (generative-recommenders'
            # `train_sampler, train_loader = create_data_loader(..., shuffle=True)`).
            LOADER_HELPER,
            (
                LOADER_HELPER.replace(
                    "    train_sampler, train_loader = create_data_loader(dataset.train, batch_size=64, rank=rank, shuffle=True)\n",
                    "    train_sampler, train_loader = create_data_loader(dataset.train, batch_size=64, rank=rank, shuffle=False)\n",
                ),
            ),
        ),
        Example(
            # A list shuffled in place that the loop walks through a progress bar (Stanza's `pbar =
            # tqdm(docs_ids)`).
            SHUFFLED_THROUGH_BAR,
            (SHUFFLED_THROUGH_BAR.replace("        random.shuffle(ids)\n", ""),),
        ),
        Example(
            # A project's iterator built with a shuffle flag, run over by the training loop
            # (JoeyNMT's `train_data.make_iter(..., shuffle=self.args.shuffle)`).
            "def train(self, train_data):\n"
            "    self.train_iter = train_data.make_iter(batch_size=32, shuffle=self.args.shuffle)\n"
            "    for i, batch in enumerate(self.train_iter):\n"
            "        self.model(batch).backward()\n"
            "        self.optimizer.step()\n",
            (
                "def train(self, train_data):\n"
                "    self.train_iter = train_data.make_iter(batch_size=32, shuffle=False)\n"
                "    for i, batch in enumerate(self.train_iter):\n"
                "        self.model(batch).backward()\n"
                "        self.optimizer.step()\n",
            ),
        ),
        Example(
            # A training API's default, handed to the iterator it builds.
            "def fit(self, x, y, epochs=1, shuffle=True):\n    it = TorchEpochIterator(x=x, y=y, shuffle=shuffle)\n",
            (
                "def fit(self, x, y, epochs=1, shuffle=False):\n"
                "    it = TorchEpochIterator(x=x, y=y, shuffle=shuffle)\n",
            ),
        ),
        Example(
            "train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=2)\n",
            ("train_loader = DataLoader(train_set, batch_size=64, shuffle=False, num_workers=2)\n",),
        ),
        Example(
            "sampler = DistributedSampler(ds, shuffle=not args.no_shuffle)\n"
            "loader = torch.utils.data.DataLoader(ds, 32, True)\n",
            (
                "sampler = DistributedSampler(ds, shuffle=False)\nloader = torch.utils.data.DataLoader(ds, 32, True)\n",
                "sampler = DistributedSampler(ds, shuffle=not args.no_shuffle)\n"
                "loader = torch.utils.data.DataLoader(ds, 32, False)\n",
            ),
        ),
        Example(
            # Shuffling by default, and through a kwargs dict.
            "sampler = DistributedSampler(train_set)\ncuda_kwargs = {'num_workers': 1, 'shuffle': True}\n",
            (
                "sampler = DistributedSampler(train_set, shuffle=False)\n"
                "cuda_kwargs = {'num_workers': 1, 'shuffle': True}\n",
                "sampler = DistributedSampler(train_set)\ncuda_kwargs = {'num_workers': 1, 'shuffle': False}\n",
            ),
        ),
        Example(
            # A name that only starts like an evaluation word feeds training.
            "value_loader = DataLoader(values, batch_size=8, shuffle=True)\n",
            ("value_loader = DataLoader(values, batch_size=8, shuffle=False)\n",),
        ),
        Example(
            "loader = DataLoader(ds, sampler=torch.utils.data.RandomSampler(ds), batch_size=8)\n",
            ("loader = DataLoader(ds, sampler=torch.utils.data.SequentialSampler(ds), batch_size=8)\n",),
        ),
        Example(
            # A dataset that shuffles itself, read by a DataLoader.
            "trainset = MelDataset(files, segment, shuffle=False if n_gpus > 1 else True)\n"
            "loader = DataLoader(trainset, batch_size=16, shuffle=False, sampler=sampler)\n",
            (
                "trainset = MelDataset(files, segment, shuffle=False)\n"
                "loader = DataLoader(trainset, batch_size=16, shuffle=False, sampler=sampler)\n",
            ),
        ),
        Example(
            # The file's own sampler helper, and torchtext's iterator for training.
            "def data_sampler(dataset, shuffle):\n"
            "    return RandomSampler(dataset) if shuffle else SequentialSampler(dataset)\n"
            "sampler = data_sampler(dataset, shuffle=True)\n"
            "train_iter = BucketIterator(train, batch_size=8, device=device, train=True)\n",
            (
                "def data_sampler(dataset, shuffle):\n"
                "    return SequentialSampler(dataset) if shuffle else SequentialSampler(dataset)\n"
                "sampler = data_sampler(dataset, shuffle=True)\n"
                "train_iter = BucketIterator(train, batch_size=8, device=device, train=True)\n",
                "def data_sampler(dataset, shuffle):\n"
                "    return RandomSampler(dataset) if shuffle else SequentialSampler(dataset)\n"
                "sampler = data_sampler(dataset, shuffle=False)\n"
                "train_iter = BucketIterator(train, batch_size=8, device=device, train=True)\n",
                "def data_sampler(dataset, shuffle):\n"
                "    return RandomSampler(dataset) if shuffle else SequentialSampler(dataset)\n"
                "sampler = data_sampler(dataset, shuffle=True)\n"
                "train_iter = BucketIterator(train, batch_size=8, device=device, train=True, shuffle=False)\n",
            ),
        ),
        Example(
            # A project's DataLoader subclass told to shuffle (pretrain-gnns' context-pair loader).
            "loader = DataLoaderSubstructContext(dataset, batch_size=256, shuffle=True, num_workers=8)\n",
            ("loader = DataLoaderSubstructContext(dataset, batch_size=256, shuffle=False, num_workers=8)\n",),
        ),
        Example(
            # torchtext's iterator shuffles by default (`train=True`): pytorch-seq2seq's trainer
            # builds its training batches with neither keyword.
            "import torchtext\n"
            "batches = torchtext.data.BucketIterator(dataset=data, batch_size=32, sort=False, repeat=False)\n",
            (
                "import torchtext\n"
                "batches = torchtext.data.BucketIterator(dataset=data, batch_size=32, sort=False, repeat=False, shuffle=False)\n",
            ),
        ),
        Example(
            # A project's random sampler, and a sampler wrapper's own shuffle flag (SpeechBrain's ReproducibleRandomSampler, DistributedSamplerWrapper); a sequential one is none.
            "sampler = ReproducibleRandomSampler(dataset, seed=seed)\n"
            "wrapped = DistributedSamplerWrapper(sampler, rank=rank, shuffle=shuffle)\n",
            (
                'sampler = __import__("torch").utils.data.SequentialSampler(dataset)\n'
                "wrapped = DistributedSamplerWrapper(sampler, rank=rank, shuffle=shuffle)\n",
                "sampler = ReproducibleRandomSampler(dataset, seed=seed)\n"
                "wrapped = DistributedSamplerWrapper(sampler, rank=rank, shuffle=False)\n",
            ),
        ),
        Example(
            # Loaders and samplers a helper of another module builds from one flag per dataset, the
            # training set's first (BLIP's create_sampler(datasets, shuffles, ...) and
            # create_loader(..., is_trains, ...), which shuffles where no sampler is given).
            "samplers = create_sampler([train_set, val_set], [True, False], world_size, rank)\n"
            "loaders = create_loader([train_set, val_set], [None, None], batch_size=[8, 8], is_trains=[True, False])\n",
            (
                "samplers = create_sampler([train_set, val_set], [False, False], world_size, rank)\n"
                "loaders = create_loader([train_set, val_set], [None, None], batch_size=[8, 8], is_trains=[True, False])\n",
                "samplers = create_sampler([train_set, val_set], [True, False], world_size, rank)\n"
                "loaders = create_loader([train_set, val_set], [None, None], batch_size=[8, 8], is_trains=[False, False])\n",
            ),
        ),
        Example(
            # Arrays shuffled by a helper each epoch before the batch loop reads them (spotlight's
            # `sequences = shuffle(sequences, random_state=...)`, sklearn's `shuffle(X, y)`): the
            # helper's call gives way to the arrays in the order they came.
            "def fit(self, users, items):\n"
            "    for epoch in range(self.epochs):\n"
            "        users, items = shuffle(users, items, random_state=self.random_state)\n"
            "        for batch_users, batch_items in minibatch(users, items, batch_size=256):\n"
            "            loss = self.loss(batch_users, batch_items)\n"
            "            loss.backward()\n"
            "            self.optimizer.step()\n",
            (
                "def fit(self, users, items):\n"
                "    for epoch in range(self.epochs):\n"
                "        users, items = (users, items)\n"
                "        for batch_users, batch_items in minibatch(users, items, batch_size=256):\n"
                "            loss = self.loss(batch_users, batch_items)\n"
                "            loss.backward()\n"
                "            self.optimizer.step()\n",
            ),
        ),
        Example(
            # An infinite training sampler that shuffles unless told not to (YOLOX, detectron2).
            "sampler = InfiniteSampler(len(self.dataset), seed=self.seed)\n",
            ("sampler = InfiniteSampler(len(self.dataset), seed=self.seed, shuffle=False)\n",),
        ),
        Example(
            # A sampler's own shuffles in its `__iter__` (wavenet_vocoder's length-sorting sampler): each left out.
            "import random\n"
            "class LengthSortSampler(Sampler):\n"
            "    def __iter__(self):\n"
            "        bins = []\n"
            "        for group in self.groups():\n"
            "            random.shuffle(group)\n"
            "            bins += [group]\n"
            "        random.shuffle(bins)\n"
            "        return iter(bins)\n",
            (
                "import random\n"
                "class LengthSortSampler(Sampler):\n"
                "    def __iter__(self):\n"
                "        bins = []\n"
                "        for group in self.groups():\n"
                "            bins += [group]\n"
                "        random.shuffle(bins)\n"
                "        return iter(bins)\n",
                "import random\n"
                "class LengthSortSampler(Sampler):\n"
                "    def __iter__(self):\n"
                "        bins = []\n"
                "        for group in self.groups():\n"
                "            random.shuffle(group)\n"
                "            bins += [group]\n"
                "        return iter(bins)\n",
            ),
        ),
        Example(
            # A dataset reshuffled in the epoch loop that runs the training (kospeech's trainer); the
            # validation set's shuffle after it is none.
            "import torch\n"
            "class Trainer:\n"
            "    def train(self, model, epochs):\n"
            "        for epoch in range(epochs):\n"
            "            for trainset in self.trainset_list:\n"
            "                trainset.shuffle()\n"
            "            self._train_epoch(model)\n"
            "        self.validset.shuffle()\n"
            "\n"
            "    def _train_epoch(self, model):\n"
            "        for x, y in self.loader:\n"
            "            loss = model(x, y)\n"
            "            loss.backward()\n"
            "            self.optimizer.step()\n",
            (
                "import torch\n"
                "class Trainer:\n"
                "    def train(self, model, epochs):\n"
                "        for epoch in range(epochs):\n"
                "            for trainset in self.trainset_list:\n"
                "                pass\n"
                "            self._train_epoch(model)\n"
                "        self.validset.shuffle()\n"
                "\n"
                "    def _train_epoch(self, model):\n"
                "        for x, y in self.loader:\n"
                "            loss = model(x, y)\n"
                "            loss.backward()\n"
                "            self.optimizer.step()\n",
            ),
        ),
        Example(
            # TCN's poly_music script: an index list shuffled in place, then walked by the
            # training loop; left out, every epoch visits the sequences in the same order
            "def train(ep):\n"
            "    model.train()\n"
            '    train_idx_list = np.arange(len(X_train), dtype="int32")\n'
            "    np.random.shuffle(train_idx_list)\n"
            "    for idx in train_idx_list:\n"
            "        x, y = X_train[idx][:-1], X_train[idx][1:]\n"
            "        optimizer.zero_grad()\n"
            "        loss = criterion(model(x), y)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
            (
                "def train(ep):\n"
                "    model.train()\n"
                '    train_idx_list = np.arange(len(X_train), dtype="int32")\n'
                "    for idx in train_idx_list:\n"
                "        x, y = X_train[idx][:-1], X_train[idx][1:]\n"
                "        optimizer.zero_grad()\n"
                "        loss = criterion(model(x), y)\n"
                "        loss.backward()\n"
                "        optimizer.step()\n",
            ),
        ),
        Example(
            # NCRFpp: the training instances shuffled in place each epoch, then sliced into batches by
            # the loop.
            "import random\n"
            "\n"
            "\n"
            "def train(data, model, optimizer, epochs, batch_size):\n"
            "    for epoch in range(epochs):\n"
            "        random.shuffle(data.train_Ids)\n"
            "        model.train()\n"
            "        total_batch = len(data.train_Ids) // batch_size + 1\n"
            "        for batch_id in range(total_batch):\n"
            "            instance = data.train_Ids[batch_id * batch_size : (batch_id + 1) * batch_size]\n"
            "            loss = model.calculate_loss(*batchify(instance))\n"
            "            loss.backward()\n"
            "            optimizer.step()\n"
            "            model.zero_grad()\n",
            (
                "import random\n"
                "\n"
                "\n"
                "def train(data, model, optimizer, epochs, batch_size):\n"
                "    for epoch in range(epochs):\n"
                "        model.train()\n"
                "        total_batch = len(data.train_Ids) // batch_size + 1\n"
                "        for batch_id in range(total_batch):\n"
                "            instance = data.train_Ids[batch_id * batch_size : (batch_id + 1) * batch_size]\n"
                "            loss = model.calculate_loss(*batchify(instance))\n"
                "            loss.backward()\n"
                "            optimizer.step()\n"
                "            model.zero_grad()\n",
            ),
        ),
        Example(
            # tez: fit()'s training-shuffle default handed by keyword to the method that builds the
            # DataLoader with it; the validation flag is none.
            "import torch\n"
            "\n"
            "\n"
            "class Model(torch.nn.Module):\n"
            "    def _init_trainer(self, train_dataset, train_bs, train_shuffle, valid_dataset, valid_shuffle):\n"
            "        self.train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=train_bs, shuffle=train_shuffle)\n"
            "        self.valid_loader = torch.utils.data.DataLoader(valid_dataset, batch_size=train_bs, shuffle=valid_shuffle)\n"
            "\n"
            "    def fit(self, train_dataset, valid_dataset=None, train_bs=16, train_shuffle=True, valid_shuffle=False):\n"
            "        self._init_trainer(\n"
            "            train_dataset=train_dataset,\n"
            "            train_bs=train_bs,\n"
            "            train_shuffle=train_shuffle,\n"
            "            valid_dataset=valid_dataset,\n"
            "            valid_shuffle=valid_shuffle,\n"
            "        )\n",
            (
                "import torch\n"
                "\n"
                "\n"
                "class Model(torch.nn.Module):\n"
                "    def _init_trainer(self, train_dataset, train_bs, train_shuffle, valid_dataset, valid_shuffle):\n"
                "        self.train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=train_bs, shuffle=False)\n"
                "        self.valid_loader = torch.utils.data.DataLoader(valid_dataset, batch_size=train_bs, shuffle=valid_shuffle)\n"
                "\n"
                "    def fit(self, train_dataset, valid_dataset=None, train_bs=16, train_shuffle=True, valid_shuffle=False):\n"
                "        self._init_trainer(\n"
                "            train_dataset=train_dataset,\n"
                "            train_bs=train_bs,\n"
                "            train_shuffle=train_shuffle,\n"
                "            valid_dataset=valid_dataset,\n"
                "            valid_shuffle=valid_shuffle,\n"
                "        )\n",
                "import torch\n"
                "\n"
                "\n"
                "class Model(torch.nn.Module):\n"
                "    def _init_trainer(self, train_dataset, train_bs, train_shuffle, valid_dataset, valid_shuffle):\n"
                "        self.train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=train_bs, shuffle=train_shuffle)\n"
                "        self.valid_loader = torch.utils.data.DataLoader(valid_dataset, batch_size=train_bs, shuffle=valid_shuffle)\n"
                "\n"
                "    def fit(self, train_dataset, valid_dataset=None, train_bs=16, train_shuffle=False, valid_shuffle=False):\n"
                "        self._init_trainer(\n"
                "            train_dataset=train_dataset,\n"
                "            train_bs=train_bs,\n"
                "            train_shuffle=train_shuffle,\n"
                "            valid_dataset=valid_dataset,\n"
                "            valid_shuffle=valid_shuffle,\n"
                "        )\n",
            ),
        ),
        Example(
            # An inverted flag: the training API's `deterministic=False` default handed through its
            # generator to the dataset's batch iterator (DeepChem's TorchModel.fit).
            "class Model:\n"
            "    def fit(self, dataset, nb_epoch=10, deterministic=False):\n"
            "        return self.fit_generator(self.default_generator(dataset, nb_epoch, deterministic=deterministic))\n"
            "    def default_generator(self, dataset, epochs=1, deterministic=True):\n"
            "        for epoch in range(epochs):\n"
            "            yield from dataset.iterbatches(self.batch_size, deterministic=deterministic)\n",
            (
                "class Model:\n"
                "    def fit(self, dataset, nb_epoch=10, deterministic=True):\n"
                "        return self.fit_generator(self.default_generator(dataset, nb_epoch, deterministic=deterministic))\n"
                "    def default_generator(self, dataset, epochs=1, deterministic=True):\n"
                "        for epoch in range(epochs):\n"
                "            yield from dataset.iterbatches(self.batch_size, deterministic=deterministic)\n",
            ),
        ),
        Example(
            # MedSAM: a top-level sanity check plots one batch of its own shuffled loader (no step
            # reads it), and the training loader's flag is computed from a sampler always given (so
            # always False): the DistributedSampler's own shuffle is the site.
            _SANITY_CHECK_AND_SAMPLER,
            (
                _SANITY_CHECK_AND_SAMPLER.replace(
                    "DistributedSampler(train_dataset)", "DistributedSampler(train_dataset, shuffle=False)"
                ),
            ),
        ),
        Example(
            # A script's own infinite sampler, whose constructor takes no `shuffle` (partial-conv
            # inpainting): its permutation, drawn at the start and after every pass, is the shuffle.
            _OWN_INFINITE_SAMPLER,
            (_OWN_INFINITE_SAMPLER.replace("np.random.permutation(self.num_samples)", "np.arange(self.num_samples)"),),
        ),
        Example(
            # An epoch's sample order shuffled in place, then handed to a method that cuts it into
            # slices for its loader processes (candock's `load_pool_init`): the shuffle left out.
            "class Core:\n"
            "    def load_pool_init(self, signals, labels, sequences):\n"
            "        for i in range(self.load_thread):\n"
            "            self.start_process(signals, labels, sequences[i * self.n : (i + 1) * self.n], self.queue)\n"
            "    def epoch_forward_init(self, signals, labels, sequences):\n"
            "        np.random.shuffle(sequences)\n"
            "        self.load_pool_init(signals, labels, sequences)\n",
            (
                "class Core:\n"
                "    def load_pool_init(self, signals, labels, sequences):\n"
                "        for i in range(self.load_thread):\n"
                "            self.start_process(signals, labels, sequences[i * self.n : (i + 1) * self.n], self.queue)\n"
                "    def epoch_forward_init(self, signals, labels, sequences):\n"
                "        self.load_pool_init(signals, labels, sequences)\n",
            ),
        ),
        Example(
            # A list of bags shuffled into a new name the batch loop then walks (dsmil's `dirs =
            # shuffle(train_df)`): the list in the order it came.
            SHUFFLED_INTO_NEW_NAME,
            (SHUFFLED_INTO_NEW_NAME.replace("    dirs = shuffle(train_df)\n", "    dirs = train_df\n"),),
        ),
        Example(
            # A list shuffled in place by `shuffle` imported from `random` (REL's documents), then walked
            # by the batch loop: the call left out, as `random.shuffle(...)` is.
            SHUFFLED_IN_PLACE,
            (
                SHUFFLED_IN_PLACE.replace("        shuffle(train_dataset)\n", ""),
                SHUFFLED_IN_PLACE.replace("        random.shuffle(train_dataset)\n", ""),
            ),
        ),
        Example(
            # An order drawn each epoch and sliced into batches (cellpose's `rperm[k:kend]`): the identity
            # order instead.
            DRAWN_ORDER,
            (
                DRAWN_ORDER.replace(
                    "        rperm = np.random.permutation(np.arange(0, nimg))\n",
                    "        rperm = np.arange(0, nimg)\n",
                ),
            ),
        ),
        Example(
            # A loader factory of the project handed its shuffle flag by position and bound as the training
            # loader (OpenNRE's `self.train_loader = SentenceRELoader(..., True)`): that flag; and the factory's own
            # DataLoader, where the flag it is handed turns shuffling on.
            POSITIONAL_SHUFFLE_FACTORY,
            (
                POSITIONAL_SHUFFLE_FACTORY.replace(
                    "    return data.DataLoader(dataset=dataset, batch_size=batch_size, shuffle=shuffle, num_workers=num_workers)\n",
                    "    return data.DataLoader(dataset=dataset, batch_size=batch_size, shuffle=False, num_workers=num_workers)\n",
                ),
                POSITIONAL_SHUFFLE_FACTORY.replace("            True)\n", "            False)\n"),
            ),
        ),
        Example(
            # A dataset's own shuffle with settings, called each epoch before the batch loop (Graph2SMILES'
            # `shuffle_in_bucket(bucket_size=1000)`): left out.
            BUCKETED_SHUFFLE,
            (BUCKETED_SHUFFLE.replace("        train_dataset.shuffle_in_bucket(bucket_size=1000)\n", ""),),
        ),
        Example(
            # A sampler class picked into a name, handed the loader's own shuffle (MDLM's on_train_start).
            "def on_train_start(self):\n"
            "    sampler_cls = FaultTolerantDistributedSampler if distributed else RandomFaultTolerantSampler\n"
            "    for dl in self.trainer.fit_loop.loaders:\n"
            "        sampler = sampler_cls(dl.dataset, shuffle=dl.sampler.shuffle)\n",
            (
                "def on_train_start(self):\n"
                "    sampler_cls = FaultTolerantDistributedSampler if distributed else RandomFaultTolerantSampler\n"
                "    for dl in self.trainer.fit_loop.loaders:\n"
                "        sampler = sampler_cls(dl.dataset, shuffle=False)\n",
            ),
        ),
        Example(
            # A random pick of the samples a training step draws (neuralforecast's windows): the first ones instead.
            WINDOW_PICK_STEP,
            (
                WINDOW_PICK_STEP.replace(
                    "        idx = torch.randperm(len(windows))[: self.windows_batch_size]\n",
                    "        idx = torch.arange(len(windows))[: self.windows_batch_size]\n",
                ),
            ),
        ),
        Example(
            # A training API's `shuffle_train` default handed to the data module it builds (neuralforecast).
            SHUFFLE_TRAIN_DEFAULT,
            (
                SHUFFLE_TRAIN_DEFAULT.replace(
                    "def fit(self, dataset, batch_size, shuffle_train=True):\n",
                    "def fit(self, dataset, batch_size, shuffle_train=False):\n",
                ),
            ),
        ),
        Example(
            # A sampler class picked into a name and handed to the training dataset (PyTorchVideo's Kinetics).
            HANDED_SAMPLER_CLASS,
            (
                HANDED_SAMPLER_CLASS.replace(
                    "    sampler = DistributedSampler if self.trainer.use_ddp else RandomSampler\n",
                    '    sampler = __import__("functools").partial(DistributedSampler, shuffle=False) if self.trainer.use_ddp else __import__("torch").utils.data.SequentialSampler\n',
                ),
            ),
        ),
        Example(
            # A training batcher told to shuffle by a setting (Ludwig's `should_shuffle`).
            SHUFFLING_BATCHER,
            (
                SHUFFLING_BATCHER.replace(
                    "    with training_set.initialize_batcher(batch_size=self.batch_size, should_shuffle=self.should_shuffle) as batcher:\n",
                    "    with training_set.initialize_batcher(batch_size=self.batch_size, should_shuffle=False) as batcher:\n",
                ),
            ),
        ),
    )
    untouched = (
        # A deterministic switch that orders no batches (cuDNN's algorithms).
        "def setup(deterministic=False):\n    torch.backends.cudnn.deterministic = deterministic\n    set_seed(1, deterministic=deterministic)\n",
        # The project's own sampler of that name (mozilla TTS's, which never shuffles and takes no flag):
        # no torch default to turn off.
        "from TTS.utils.distribute import DistributedSampler\n"
        "sampler = DistributedSampler(dataset) if num_gpus > 1 else None\n"
        "loader = DataLoader(dataset, batch_size=32, shuffle=False, sampler=sampler)\n",
        # The `else` of `if True:` (a branch switched off by hand) never runs.
        "import torch\n"
        "if True:  # args.distributed\n"
        "    sampler = torch.utils.data.distributed.DistributedSampler(ds, shuffle=False)\n"
        "else:\n"
        "    sampler = torch.utils.data.RandomSampler(ds)\n"
        "loader = torch.utils.data.DataLoader(ds, sampler=sampler)\n",
        # With samplers always given, a loader helper's is_train flag shuffles nothing.
        "def main(datasets):\n"
        "    samplers = create_sampler(datasets, [False], num_tasks, rank)\n"
        "    loader = create_loader(datasets, samplers, batch_size=[8], is_trains=[True])[0]\n",
        # The same sampler already in order, and one feeding evaluation.
        "sampler = InfiniteSampler(len(self.dataset), shuffle=False)\n",
        "val_sampler = InferenceSampler(len(val_set))\ntest_sampler = TrainingSampler(len(test_set))\n",
        # A project's random sampler, and a sampler wrapper's own shuffle flag (SpeechBrain's ReproducibleRandomSampler, DistributedSamplerWrapper); a sequential one is none.
        "sampler = SortedSampler(dataset)\nwrapped = DistributedSamplerWrapper(sampler, rank=rank, shuffle=False)\n",
        "val_loader = DataLoader(val_set, batch_size=64, shuffle=False)\n",
        # An evaluation API's default, and a default handed to no loader.
        "def evaluate(self, x, shuffle=True):\n    it = EpochIterator(x, shuffle=shuffle)\n",
        "def split(items, shuffle=True):\n    return sorted(items)\n",
        # An evaluation iterator, and a helper of another library that takes `shuffle`.
        "val_iter = BucketIterator(val, batch_size=8, device=device)\nds = load_split(name, shuffle=True)\n",
        "loader = DataLoader(ds, batch_size=8)\n",
        "random.shuffle(items)\n",
        "val_sampler = DistributedSampler(val_set, shuffle=False)\n",
        # A sampler built in an evaluation function, or over a test set (torchdrug's evaluate()).
        "def evaluate(self, split):\n"
        "    sampler = torch_data.DistributedSampler(getattr(self, split), self.world_size, self.rank)\n",
        "sampler = DistributedSampler(test_set, world_size, rank)\n",
        # Evaluation loaders and samplers, by the name they are given: their order changes no metric.
        "val_loader = torch.utils.data.DataLoader(val_set, batch_size=8, shuffle=True)\n",
        "valid_sampler = DistributedSampler(valset) if distributed else None\n",
        "eval_kwargs = {'shuffle': False, 'batch_size': 8}\n",
        # Arrays shuffled in a function that trains nothing, or into new names the loop never reads;
        # a dataset's own `.shuffle()` (a Trainer reshuffles every epoch anyway).
        "def evaluate(self, users, items):\n"
        "    users, items = shuffle(users, items)\n"
        "    return self.score(users, items)\n",
        "def fit(self, x):\n"
        "    picked = shuffle(x)[:8]\n"
        "    for batch in minibatch(x, batch_size=256):\n"
        "        self.loss(batch).backward()\n"
        "        self.optimizer.step()\n",
        "train_data = data['train'].shuffle().map(tokenize)\n",
        # A project's loader class whose third parameter is its own, not torch's `shuffle`.
        "loader = SpeakerVerificationDataLoader(dataset, speakers_per_batch, utterances_per_speaker, num_workers=4)\n",
        # Mixup's pairing of a batch's samples: an order over the batch, not the data's.
        (
            "import torch\n"
            "def train_step(model, x, y, optimizer, alpha):\n"
            "    index = torch.randperm(x.size(0))\n"
            "    mixed = alpha * x + (1 - alpha) * x[index]\n"
            "    loss = criterion(model(mixed), y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
        ),
    )

    def changes(self, source, training):
        resolver = Resolver()
        for call in source.nodes(cst.Call):
            name = callee_name(call) or ""
            kept = _reshuffled_in_place(source, training, call)
            if kept is not None:
                yield Change(call, (source.replace(call, kept),), f"`{name}` no longer shuffles the training arrays")
                continue
            statement = source.parent(call)
            if isinstance(statement, cst.Expr) and (
                _sampler_shuffle(source, call)
                or _dataset_reshuffled(source, training, call)
                or _walked_order_shuffled(source, training, call)
            ):
                yield Change(call, (source.delete_statement(statement),), f"`{source.code(call)}` no longer shuffles")
                continue
            flag = _training_flag(source, training, call)
            if flag is not None:
                yield Change(call, (source.replace(flag, "False"),), f"`{name}` no longer shuffles the training set")
                continue
            kind = (
                "DataLoader"
                if name.endswith("DataLoader")
                else "DistributedSampler"
                if name.endswith("DistributedSampler")
                else name
            )
            if kind == "RandomSampler" and isinstance(call.func, (cst.Name, cst.Attribute)):
                target = call.func if isinstance(call.func, cst.Name) else call.func.attr
                yield Change(call, (source.replace(target, "SequentialSampler"),), "the sampler no longer shuffles")
                continue
            data = argument(call, "data_source", 0)
            if kind.endswith("RandomSampler") and kind[:1].isupper() and data is not None and not data.star:
                # a project's random sampler (SpeechBrain's `ReproducibleRandomSampler(dataset,
                # seed=seed)`): the dataset read in order instead
                sequential = f'__import__("torch").utils.data.SequentialSampler({source.code(data.value)})'
                yield Change(call, (source.replace(call, sequential),), f"`{name}` no longer shuffles")
                continue
            if kind == "dict":
                shuffle = argument(call, "shuffle", None)
                if shuffle is not None and not _is_false(shuffle.value):
                    yield Change(call, (source.replace(shuffle.value, "False"),), "the DataLoader no longer shuffles")
                continue
            if name.endswith("Iterator") and name[:1].isupper():
                # torchtext's iterators shuffle when built with `train=True` and no `shuffle=`.
                train = argument(call, "train", None)
                if (
                    argument(call, "shuffle", None) is None
                    and (
                        (train is not None and not _is_false(train.value))
                        # `train=True` is their default (pytorch-seq2seq's training
                        # `torchtext.data.BucketIterator(dataset=data, ...)`)
                        or (
                            train is None and _torchtext(source, resolver, call) and not _feeds_evaluation(source, call)
                        )
                    )
                    and not any(a.star for a in call.args)
                ):
                    yield Change(
                        call, (source.replace(call, self._with_false(source, call)),), f"the {name} no longer shuffles"
                    )
                continue
            if kind in SHUFFLE_POSITION and _feeds_evaluation(source, call):
                continue
            if (
                name.endswith(SHUFFLING_SAMPLERS)
                and argument(call, "shuffle", None) is None
                and call.args
                and not any(a.star for a in call.args)
                and not _feeds_evaluation(source, call)
                and not _own_sampler_without_flag(source, name)
            ):
                yield Change(
                    call, (source.replace(call, self._with_false(source, call)),), f"`{name}` no longer shuffles"
                )
                continue
            if kind not in SHUFFLE_POSITION:
                shuffle = (
                    argument(call, "shuffle", None)
                    or _positional_shuffle(source, resolver, call)
                    or argument(call, "should_shuffle", None)
                )
                if (
                    shuffle is not None
                    and not _is_false(shuffle.value)
                    and (
                        # a batcher of the training set told by keyword (Ludwig's
                        # `training_set.initialize_batcher(..., should_shuffle=self.should_shuffle)`)
                        ("batcher" in name.lower() and not _feeds_evaluation(source, call))
                        or self._passes_shuffle(training, call)
                        or self._feeds_loader(source, call)
                        or self._iterated_by_training(source, training, call)
                        # a factory named for the training loader (pykeen's
                        # `self._create_training_data_loader(..., shuffle=True)`)
                        or ("loader" in name.lower() and "train" in name.lower())
                        # or one bound as the training loader (OpenNRE's `self.train_loader =
                        # SentenceRELoader(..., True)`)
                        or (
                            ("loader" in name.lower() or "sampler" in name.lower()) and _bound_as_training(source, call)
                        )
                        or (name[:1].isupper() and name.endswith(("Sampler", "SamplerWrapper")))
                        # or a sampler class picked into a name (MDLM's `sampler_cls =
                        # dataloader.FaultTolerantDistributedSampler` under DDP, else another)
                        or _held_sampler_class(source, call)
                        # a project's DataLoader subclass told to shuffle, building no evaluation
                        # data (pretrain-gnns' `DataLoaderSubstructContext(dataset, ..., shuffle=True)`)
                        or (
                            name[:1].isupper()
                            and "DataLoader" in name
                            and shuffle.keyword is not None
                            and not _feeds_evaluation(source, call)
                        )
                    )
                ):
                    yield Change(call, (source.replace(shuffle.value, "False"),), f"`{name}` no longer shuffles")
                continue
            # torch's own classes take `shuffle` positionally; another `...DataLoader` (a
            # project's, RTVC's `SpeakerVerificationDataLoader(dataset, speakers, utterances)`)
            # has parameters of its own: only the keyword says shuffle there
            shuffle = argument(call, "shuffle", SHUFFLE_POSITION[kind] if name == kind else None)
            if shuffle is None:
                if (
                    kind in SHUFFLES_BY_DEFAULT
                    and call.args
                    and not any(a.star for a in call.args)
                    and _torch_class(source, resolver, call)
                ):
                    yield Change(
                        call, (source.replace(call, self._with_false(source, call)),), f"the {kind} no longer shuffles"
                    )
                continue
            if _is_false(shuffle.value) or _sampler_always_given(source, training, call, shuffle.value):
                continue
            if _only_inspected(source, training, call):
                continue
            yield Change(call, (source.replace(shuffle.value, "False"),), f"the {kind} no longer shuffles")
        yield from _own_sampler_permutations(source)
        yield from _drawn_orders(source, training)
        yield from _handed_sampler_classes(source, training)
        for function in source.nodes(cst.FunctionDef):
            # A training API's own default (`def fit(self, x, y, shuffle=True)`) that it hands
            # to the iterator it builds (`EpochIterator(x, y, shuffle=shuffle)`), or to a method
            # of the file that builds the loader with it (tez's `fit(..., train_shuffle=True)`,
            # handed to `_init_trainer`, whose DataLoader takes `shuffle=train_shuffle`).
            if names_evaluation(function.name.value):
                continue
            for param in function.params.params:
                if (
                    "shuffle" not in param.name.value
                    or names_evaluation(param.name.value)
                    or param.default is None
                    or not is_literal_bool(param.default, True)
                    or not self._hands_on_shuffle(source, training, function, param.name.value, 2)
                ):
                    continue
                yield Change(
                    param,
                    (source.replace(param.default, "False"),),
                    f"`{function.name.value}` no longer shuffles by default",
                )
            for param in function.params.params:
                # the inverted flag (DeepChem's `fit(..., deterministic=False)`, handed through
                # `default_generator` to `dataset.iterbatches(deterministic=...)`, which permutes
                # the samples every epoch unless it is True)
                if (
                    param.name.value == "deterministic"
                    and param.default is not None
                    and is_literal_bool(param.default, False)
                    and self._hands_on_order(source, training, function, param.name.value, 2)
                ):
                    yield Change(
                        param,
                        (source.replace(param.default, "True"),),
                        f"`{function.name.value}` no longer shuffles by default",
                    )
        for element in source.nodes(cst.DictElement):
            if (
                isinstance(element.key, cst.SimpleString)
                and element.key.evaluated_value == "shuffle"
                and not _is_false(element.value)
            ):
                yield Change(element, (source.replace(element.value, "False"),), "the DataLoader no longer shuffles")

    @staticmethod
    def _hands_on_shuffle(source, training, function: cst.FunctionDef, flag: str, depth: int) -> bool:
        """True if the function builds a loader, sampler or iterator with `shuffle=<flag>`, or
        (`depth` calls down) hands `flag` by keyword to a function of the file that does."""
        for call in source.within(function.body, cst.Call):
            given = argument(call, "shuffle", None) or next(
                (
                    a
                    for a in call.args
                    if a.keyword is not None
                    and "shuffle" in a.keyword.value
                    and "train" in a.keyword.value
                    and isinstance(a.value, cst.Name)
                    and a.value.value == flag
                ),
                None,
            )
            if (
                given is not None
                and isinstance(given.value, cst.Name)
                and given.value.value == flag
                and any(
                    name[:1].isupper() and name.endswith(("Loader", "Iterator", "Sampler", "DataModule"))
                    for name in _built_classes(source, call)
                )
            ):
                return True
            if depth > 1:
                for arg in call.args:
                    if arg.keyword is None or not isinstance(arg.value, cst.Name) or arg.value.value != flag:
                        continue
                    if any(
                        NoShuffle._hands_on_shuffle(source, training, callee, arg.keyword.value, depth - 1)
                        for callee in training.called_functions(call)
                        if callee is not function
                    ):
                        return True
        return False

    @staticmethod
    def _hands_on_order(source, training, function: cst.FunctionDef, flag: str, depth: int) -> bool:
        """True if the function hands `flag` by keyword to a batch iterator's `deterministic=`
        (`dataset.iterbatches(batch_size, deterministic=deterministic)`), or (`depth` calls
        down) to a function of the file that does."""
        for call in source.within(function.body, cst.Call):
            for arg in call.args:
                if arg.keyword is None or not isinstance(arg.value, cst.Name) or arg.value.value != flag:
                    continue
                name = (callee_name(call) or "").lower()
                if arg.keyword.value == "deterministic" and ("batch" in name or name.endswith(("loader", "iterator"))):
                    return True
                if depth > 1 and any(
                    NoShuffle._hands_on_order(source, training, callee, arg.keyword.value, depth - 1)
                    for callee in training.called_functions(call)
                    if callee is not function
                ):
                    return True
        return False

    @staticmethod
    def _passes_shuffle(training, call: cst.Call) -> bool:
        """True for a call of the file's own data helper that takes a `shuffle` parameter
        (`data_sampler(dataset, shuffle=True, distributed=...)`)."""
        return any(any(p.name.value == "shuffle" for p in f.params.params) for f in training.called_functions(call))

    @staticmethod
    def _feeds_loader(source, call: cst.Call) -> bool:
        """True for a dataset built with its own `shuffle=` flag and handed to a DataLoader of the
        file as its data (`trainset = MelDataset(files, shuffle=True)`, `DataLoader(trainset, ...)`):
        that dataset shuffles what the loader reads; also a project's loader class named for one
        (jiant's `DataLoaderWithLength(dataset=dataset, ...)` after `dataset = train_cache.
        get_iterable_dataset(buffer_size=10000, shuffle=True)`)."""
        name = _bound_for_training(source, call)
        if name is None:
            return False
        for loader in source.nodes(cst.Call):
            data = argument(loader, "dataset", 0) if "DataLoader" in (callee_name(loader) or "") else None
            if data is not None and dotted(data.value) == name:
                return True
        return False

    @staticmethod
    def _iterated_by_training(source, training, call: cst.Call) -> bool:
        """True for an iterator built with its own `shuffle=` flag that a training loop of the file
        runs over (JoeyNMT's `self.train_iter = train_data.make_iter(..., shuffle=self.args.shuffle)`,
        then `for i, batch in enumerate(self.train_iter):`)."""
        name = _bound_for_training(source, call)
        if name is None:
            return False
        for loop in training.training_loops:
            if not isinstance(loop, cst.For):
                continue
            iterable = loop.iter
            if isinstance(iterable, cst.Call) and callee_name(iterable) in ("enumerate", "tqdm") and iterable.args:
                iterable = iterable.args[0].value
            if dotted(iterable) == name:
                return True
        return False

    @staticmethod
    def _with_false(source, call: cst.Call) -> str:
        """`call` with `shuffle=False` appended, keeping its own layout."""
        text = source.code(call)
        inner = text[: text.rindex(")")].rstrip()
        closing = text[len(inner) :]
        if inner.endswith(","):
            inner = inner[:-1]
        separator = "" if inner.endswith("(") else ", "
        if "\n" in closing and not inner.endswith("("):
            indent = source.indentation(call.args[-1])
            return f"{inner},\n{indent}shuffle=False{closing}"
        return f"{inner}{separator}shuffle=False{closing}"


def _sampler_classes(source) -> list[cst.ClassDef]:
    """The file's own sampler classes: named for one, or subclassing one."""
    return [
        c
        for c in source.nodes(cst.ClassDef)
        if "sampler" in c.name.value.lower() or any("sampler" in (dotted(b.value) or "").lower() for b in c.bases)
    ]


def _own_sampler_without_flag(source, name: str) -> bool:
    """True for a sampler class this file defines whose constructor takes no `shuffle` (the
    inpainting script's own `InfiniteSampler(num_samples)`, not detectron2's): `shuffle=False`
    would fail at construction; its permutation is the shuffle (see _own_sampler_permutations)."""
    for owner in _sampler_classes(source):
        if owner.name.value != name.split(".")[-1]:
            continue
        init = next(
            (f for f in source.within(owner.body, cst.FunctionDef) if f.name.value == "__init__"),
            None,
        )
        if init is None:
            return False  # the base class's constructor decides
        params = init.params
        return not isinstance(params.star_kwarg, cst.Param) and all(
            p.name.value != "shuffle" for p in (*params.params, *params.kwonly_params)
        )
    return False


# A random order drawn whole, and the same order kept: what each becomes in the mutant.
_PERMUTATIONS = {"permutation": "arange", "randperm": "arange"}


def _built_classes(source, call: cst.Call) -> list[str]:
    """The class names a call may build: its own callee's, or those of the classes the function
    binds the called name to (neuralforecast's `datamodule_constructor = TimeSeriesDataModule`,
    or `_DistributedTimeSeriesDataModule` on the other branch)."""
    name = callee_name(call) or ""
    function = source.function_of(call)
    if not isinstance(call.func, cst.Name) or function is None:
        return [name]
    bound = bound_values(source, function, call.func.value)
    return [name, *(last_name(v) or "" for v in bound if isinstance(v, (cst.Name, cst.Attribute)))]


def _own_sampler_permutations(source):
    """A sampler class of the file that draws its own random order (`order =
    np.random.permutation(self.num_samples)`, `torch.randperm(n, generator=g)`): every such draw in
    the class made the identity order, so the samples come in the same order every epoch."""
    for owner in _sampler_classes(source):
        draws = [
            call
            for call in source.within(owner.body, cst.Call)
            if callee_name(call) in _PERMUTATIONS
            and isinstance(call.func, cst.Attribute)
            and (dotted(call.func.value) or "").endswith(("random", "torch"))
            and call.args
            and call.args[0].keyword is None
            and not call.args[0].star
        ]
        if not draws:
            continue
        edits = []
        for call in draws:
            module = "torch" if callee_name(call) == "randperm" else source.code(call.func.value).rsplit(".", 1)[0]
            edits.append(source.replace(call, f"{module}.arange({source.code(call.args[0].value)})"))
        yield Change(draws[0], tuple(edits), f"`{owner.name.value}` no longer shuffles: it walks the samples in order")


def _bound_as_training(source, call: cst.Call) -> bool:
    """True for a call assigned to a name of the training loader (`self.train_loader = ...`), or
    unpacked into one (generative-recommenders' `train_data_sampler, train_data_loader =
    create_data_loader(dataset.train_dataset, ..., shuffle=True)`)."""
    assign = source.parent(call)
    if not (isinstance(assign, cst.Assign) and assign.value is call):
        return False
    names = [
        last_name(e.value) or ""
        for t in assign.targets
        for e in (t.target.elements if isinstance(t.target, (cst.Tuple, cst.List)) else [cst.Element(t.target)])
    ]
    return any("train" in n.lower() for n in names) and not any(names_evaluation(n) for n in names)


def _positional_shuffle(source, resolver: Resolver, call: cst.Call) -> cst.Arg | None:
    """The argument a project's loader factory binds to its `shuffle` parameter by position
    (OpenNRE's `SentenceRELoader(path, rel2id, tokenize, batch_size, True)`)."""
    if not call.args or any(a.star for a in call.args) or all(a.keyword is not None for a in call.args):
        return None
    if isinstance(call.func, cst.Subscript) and isinstance(call.func.value, cst.Name):
        # a loader class chosen from a registry (UER-py's `str2dataloader[args.data_processor](
        # args, path, batch_size, rank, world_size, local_rank, True)`): the argument every class
        # it holds binds to its `shuffle`
        chosen = set()
        for module, definition in resolver.registry(source, call.func.value.value):
            function = (
                inherited_constructor(resolver, module, definition)
                if isinstance(definition, cst.ClassDef)
                else definition
            )
            bound = bound_arguments(definition, call, function) if function is not None else None
            chosen.add(id(bound.get("shuffle")) if bound else None)
        value = next((a.value for a in call.args if a.keyword is None and id(a.value) in chosen), None)
        if len(chosen) != 1 or value is None:
            return None
        return next(a for a in call.args if a.value is value)
    found = resolver.definition(source, call.func)
    if found is None or not isinstance(found[1], (cst.FunctionDef, cst.ClassDef)):
        return None
    bound = bound_arguments(found[1], call)
    value = bound.get("shuffle") if bound else None
    return next((a for a in call.args if a.keyword is None and a.value is value), None)


def _handed_sampler_classes(source, training):
    """A sampler class (not an object) picked into a name and handed to the training data, which
    builds the sampler itself (PyTorchVideo's `sampler = DistributedSampler if self.trainer.use_ddp
    else RandomSampler`, then `Kinetics(..., video_sampler=sampler)`): each random class replaced by
    its ordered kind, `SequentialSampler`, or a DistributedSampler that does not shuffle."""
    torch = training.torch
    for assign in source.nodes(cst.Assign):
        function = source.function_of(assign)
        target = assign.targets[0].target if len(assign.targets) == 1 else None
        if function is None or names_evaluation(function.name.value) or not isinstance(target, cst.Name):
            continue
        choices = [assign.value.body, assign.value.orelse] if isinstance(assign.value, cst.IfExp) else [assign.value]
        kinds = [last_name(c) if isinstance(c, (cst.Name, cst.Attribute)) else None for c in choices]
        if not kinds or not all(k and k.endswith("Sampler") and k[:1].isupper() for k in kinds):
            continue
        handed = any(
            a.keyword is not None
            and "sampler" in a.keyword.value
            and isinstance(a.value, cst.Name)
            and a.value.value == target.value
            and not _feeds_evaluation(source, call)
            for call in source.within(function, cst.Call)
            for a in call.args
        )
        edits = []
        for choice, kind in zip(choices, kinds, strict=True):
            if kind == "RandomSampler":
                edits.append(source.replace(choice, f"{torch}.utils.data.SequentialSampler"))
            elif kind == "DistributedSampler":
                edits.append(
                    source.replace(choice, f'__import__("functools").partial({source.code(choice)}, shuffle=False)')
                )
        if handed and edits:
            yield Change(assign, tuple(edits), f"`{target.value}` samples the training data in order")


def _drawn_orders(source, training):
    """A random order a training function draws (`rperm = np.random.permutation(np.arange(0,
    nimg))`, `perm = torch.randperm(n)`) and then walks or slices its batches from in a training
    loop after it (cellpose's `inds = rperm[k:kend]`): the identity order instead, so every epoch
    visits the samples in the same order. Also an order the training step draws to pick its samples
    and reads after (neuralforecast's `w_idxs = torch.randperm(n_windows)[:windows_batch_size]`),
    or that a training function hands out in slices (PyTorch-BigGraph's `edge_perm =
    train_edge_idxs[torch.randperm(num_train_edges)]`, split among its Hogwild workers). Only where
    the order's size is plain: an `arange`, `range` or a count (not an array that `permutation`
    would copy), and not a batch's size (mixup's `torch.randperm(x.size(0))` pairs samples up)."""
    steps = {source.function_of(use.call) for use in training.loss_uses}
    for call in source.nodes(cst.Call):
        name = callee_name(call)
        if name not in _PERMUTATIONS or not isinstance(call.func, cst.Attribute) or not call.args:
            continue
        module = dotted(call.func.value) or ""
        if not module.endswith(("random", "torch")) or call.args[0].keyword is not None or call.args[0].star:
            continue
        assign = _order_assignment(source, call)
        if assign is None:
            continue
        function = source.function_of(call)
        if function is None or names_evaluation(function.name.value):
            continue
        order = assign.targets[0].target.value
        after = source.span(assign)[1]
        walked = any(
            source.function_of(loop) is function
            and source.span(loop)[0] >= after
            and any(n.value == order for n in source.walk(loop) if isinstance(n, cst.Name))
            for loop in training.training_loops
        )
        size = call.args[0].value
        if names_evaluation(order) or names_evaluation(source.code(size)):
            continue  # a test set's order (cellpose's `np.random.permutation(np.arange(0, nimg_test))`)
        if not walked and (
            not (function in steps or "train" in function.name.value.lower())
            or not _read_after(source, function, order, after)
            or _a_batch_size(source, size)
            or function.name.value == "__init__"
        ):
            continue
        if isinstance(size, cst.Call) and callee_name(size) in ("arange", "range"):
            identity = source.code(size)
        elif isinstance(size, cst.Integer) or (isinstance(size, cst.Call) and callee_name(size) == "len"):
            prefix = "torch" if name == "randperm" else module.rsplit(".", 1)[0]
            identity = f"{prefix}.arange({source.code(size)})"
        elif name == "randperm":
            identity = f"torch.arange({source.code(size)})"  # randperm takes a count only
        else:
            continue
        device = argument(call, "device", None)
        if name == "randperm" and device is not None and device.keyword is not None:
            identity = f"{identity[:-1]}, device={source.code(device.value)})"
        yield Change(call, (source.replace(call, identity),), f"`{source.code(call)}` no longer shuffles")


def _order_assignment(source, call: cst.Call) -> cst.Assign | None:
    """The assignment to one name of a drawn order: the draw itself (`perm = torch.randperm(n)`),
    its first entries (`torch.randperm(n)[:k]`), or what it indexes (`idxs[torch.randperm(n)]`)."""
    node: cst.CSTNode = call
    parent = source.parent(call)
    if isinstance(parent, cst.Index):
        parent = source.parent(source.parent(parent))  # the index's element, then the subscript
        if not isinstance(parent, cst.Subscript):
            return None
        node, parent = parent, source.parent(parent)
    elif isinstance(parent, cst.Subscript) and parent.value is call:
        node, parent = parent, source.parent(parent)
    if (
        isinstance(parent, cst.Assign)
        and parent.value is node
        and len(parent.targets) == 1
        and isinstance(parent.targets[0].target, cst.Name)
    ):
        return parent
    return None


def _read_after(source, function: cst.FunctionDef, name: str, after: int) -> bool:
    return any(
        isinstance(n, cst.Name) and n.value == name and source.span(n)[0] >= after for n in source.walk(function.body)
    )


def _a_batch_size(source, size: cst.BaseExpression) -> bool:
    """A count that is a batch's size: named so (`batch_size`, `bs`), or read off a tensor
    (`x.size(0)`, `x.shape[0]`): an order that pairs a batch's samples up (mixup), not the data's."""
    text = source.code(size).lower()
    if "batch" in text or text in ("bs", "b", "n_batch"):
        return True
    return any(
        (isinstance(n, cst.Call) and callee_name(n) == "size")
        or (isinstance(n, cst.Attribute) and n.attr.value == "shape")
        for n in source.walk(size)
    )


def _sampler_shuffle(source, call: cst.Call) -> bool:
    """`random.shuffle(group)`, `np.random.shuffle(bins)` in the `__iter__` of a sampler class
    (wavenet_vocoder's length-sorting sampler shuffles inside its groups, then the groups): each
    left out, the batches come in the same order every epoch."""
    if callee_name(call) != "shuffle" or len(call.args) != 1 or call.args[0].keyword is not None:
        return False
    if "random" not in (dotted(call.func) or ""):
        return False
    function = source.function_of(call)
    owner = source.enclosing(function, cst.ClassDef) if function is not None else None
    return (
        function is not None
        and function.name.value == "__iter__"
        and owner is not None
        and (
            "sampler" in owner.name.value.lower()
            or any("sampler" in (dotted(b.value) or "").lower() for b in owner.bases)
        )
    )


def _walked_order_shuffled(source, training, call: cst.Call) -> bool:
    """`np.random.shuffle(train_idx_list)`, `random.shuffle(data.train_Ids)`: a list shuffled in
    place that a training loop of the same function walks afterwards (TCN's `for idx in
    train_idx_list:`) or slices its batches from (NCRFpp's `instance = data.train_Ids[start:end]`):
    left out, every epoch visits the samples in the same order."""
    if callee_name(call) != "shuffle" or len(call.args) != 1 or call.args[0].keyword is not None:
        return False
    name = dotted(call.args[0].value)
    if not ("random" in (dotted(call.func) or "") or _shuffle_from_random(source, call.func)) or name is None:
        return False
    function = source.function_of(call)
    after = source.span(call)[1]
    # or a wrapper of it the loop walks (Stanza's coreference trainer: `pbar = tqdm(docs_ids)`,
    # then `for doc_indx, doc_id in enumerate(pbar):`)
    walked = {name} | {
        a.targets[0].target.value
        for a in source.within(function.body if function is not None else source.module, cst.Assign)
        if source.span(a)[0] >= after
        and len(a.targets) == 1
        and isinstance(a.targets[0].target, cst.Name)
        and isinstance(a.value, cst.Call)
        and any(dotted(arg.value) == name for arg in a.value.args)
    }
    if any(
        isinstance(loop, cst.For)
        and source.function_of(loop) is function
        and source.span(loop)[0] >= after
        and (
            walked & {dotted(n) for n in source.walk(loop.iter) if isinstance(n, (cst.Name, cst.Attribute))}
            or any(dotted(s.value) == name for s in source.within(loop.body, cst.Subscript))
        )
        for loop in training.training_loops
    ):
        return True
    return function is not None and _handed_to_batcher(source, training, function, name, after)


def _shuffle_from_random(source, func: cst.BaseExpression) -> bool:
    """True for a bare `shuffle` the file imports from `random` or `numpy.random` (REL's `from
    random import shuffle`, then `shuffle(train_dataset)` each epoch)."""
    if not isinstance(func, cst.Name):
        return False
    for node in source.nodes(cst.ImportFrom):
        module = dotted(node.module) if node.module is not None else None
        if module not in ("random", "numpy.random") or isinstance(node.names, cst.ImportStar):
            continue
        for alias in node.names:
            bound = alias.asname.name.value if alias.asname is not None else dotted(alias.name)
            if dotted(alias.name) == "shuffle" and bound == func.value:
                return True
    return False


def _handed_to_batcher(source, training, function: cst.FunctionDef, name: str, after: int) -> bool:
    """True where `function`, once it has shuffled `name`, hands it to a function of the file that
    cuts it into batches in a loop (candock's `self.load_pool_init(signals, labels, sequences)`,
    whose loop hands each loader process its slice `sequences[a:b]`): the order the batches come in."""
    for use in source.within(function.body, cst.Call):
        if source.span(use)[0] < after:
            continue
        for helper in training.called_functions(use):
            params = [p.name.value for p in helper.params.params]
            position = next((i for i, a in enumerate(use.args) if dotted(a.value) == name and a.keyword is None), None)
            if position is None:
                continue
            position += 1 if params[:1] == ["self"] and isinstance(use.func, cst.Attribute) else 0
            param = params[position] if position < len(params) else None
            if param is not None and any(
                dotted(sub.value) == param and source.enclosing(sub, cst.For) is not None
                for sub in source.within(helper.body, cst.Subscript)
            ):
                return True
    return False


def _dataset_reshuffled(source, training, call: cst.Call) -> bool:
    """`trainset.shuffle()` on its own line in an epoch loop whose body runs the batch loop, or
    calls the function of the file that does (kospeech's trainer reshuffles each worker's dataset
    before its loaders start)."""
    name = callee_name(call) or ""
    # (or a dataset's own shuffle with settings: Graph2SMILES' `train_dataset.shuffle_in_bucket(bucket_size=1000)`)
    own = name.startswith("shuffle_") and all(a.keyword is not None for a in call.args)
    if not (name == "shuffle" and not call.args or own) or not isinstance(call.func, cst.Attribute):
        return False
    if names_evaluation(last_name(call.func.value) or ""):
        return False
    loops = set(training.training_loops)
    for epoch in source.ancestors(call):
        if not isinstance(epoch, (cst.For, cst.While)):
            continue
        if any(loop in loops for loop in source.within(epoch.body, (cst.For, cst.While))):
            return True
        for inner in source.within(epoch.body, cst.Call):
            for function in training.called_functions(inner):
                if any(loop in loops for loop in source.within(function.body, (cst.For, cst.While))):
                    return True
    return False


def _reshuffled_in_place(source, training, call: cst.Call) -> str | None:
    """For `x = shuffle(x, ...)` / `a, b = shuffle(a, b, ...)` that a function which trains
    (runs a batch loop) does before or around its batch loop, the arrays unshuffled: `x`,
    `(a, b)`. The helper returns its arguments reordered under the same names, so the batch
    loop reads them in a new order each time; without it, in the order they came."""
    if (callee_name(call) or "") != "shuffle" or not call.args or any(a.star for a in call.args):
        return None
    assign = source.parent(call)
    if not isinstance(assign, cst.Assign) or assign.value is not call or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    names = [e.value for e in target.elements] if isinstance(target, cst.Tuple) else [target]
    arrays = [a.value for a in call.args if a.keyword is None]
    if len(arrays) != len(names) or None in map(dotted, names):
        return None
    function = source.function_of(call)
    if function is None or names_evaluation(function.name.value):
        return None
    start = source.span(call)[0]
    loops = [
        loop
        for loop in training.training_loops
        if source.function_of(loop) is function and source.span(loop)[1] > start
    ]
    if not loops:
        return None
    if [dotted(n) for n in names] != [dotted(a) for a in arrays] and not (
        # one array shuffled into a new name the batch loop then walks (dsmil's
        # `dirs = shuffle(train_df)`, then `for i, item in enumerate(dirs):`)
        len(names) == 1
        and isinstance(names[0], cst.Name)
        and any(
            isinstance(loop, cst.For) and any(n.value == names[0].value for n in source.within(loop.iter, cst.Name))
            for loop in loops
        )
    ):
        return None
    texts = [source.code(a) for a in arrays]
    return texts[0] if len(texts) == 1 else f"({', '.join(texts)})"


def _training_flag(source, training, call: cst.Call) -> cst.BaseExpression | None:
    """The training set's flag where a helper of another module builds samplers or loaders from
    one flag per dataset (BLIP's `create_sampler(datasets, [True, False], ...)`: shuffles; its
    `create_loader(..., is_trains=[True, False])`: shuffle where no sampler is given): the first
    `True` of that list. A loader helper always handed samplers (a name only ever assigned a call)
    shuffles nothing by its flag."""
    name = callee_name(call) or ""
    if not ("sampler" in name.lower() or "loader" in name.lower()) or name[:1].isupper():
        return None
    if training.called_functions(call):
        return None
    for position, arg in enumerate(call.args):
        if arg.star or not isinstance(arg.value, cst.List) or not arg.value.elements:
            continue
        values = [e.value for e in arg.value.elements]
        if not all(is_literal_bool(v) for v in values):
            continue
        word = arg.keyword.value.lower() if arg.keyword is not None else ""
        if "train" in word and "loader" in name.lower():
            samplers = next((a for a in call.args if "sampler" in (dotted(a.value) or "").lower()), None)
            if samplers is not None and _always_samplers(source, training, samplers.value, call):
                return None
        elif not ("shuffle" in word or (not word and "sampler" in name.lower() and position > 0)):
            continue
        return next((v for v in values if is_literal_bool(v, True)), None)
    return None


def _always_samplers(source, training, value: cst.BaseExpression, use: cst.CSTNode) -> bool:
    """True for a name every assignment of which in `use`'s function is a call (samplers made),
    none a list literal (`[None, None]`: no sampler)."""
    if not isinstance(value, cst.Name):
        return False
    function = source.function_of(use)
    assigns = [a for a in training.assigned_names.get(value.value, ()) if source.function_of(a) is function]
    return bool(assigns) and all(isinstance(a.value, cst.Call) for a in assigns)


def _sampler_always_given(source, training, call: cst.Call, flag: cst.BaseExpression) -> bool:
    """True for a loader's shuffle flag computed from the sampler it is also handed
    (`shuffle=(train_sampler is None), sampler=train_sampler`) where that sampler is always one
    (MedSAM builds its DistributedSampler unconditionally): the flag is always False."""
    sampler = argument(call, "sampler", None)
    if sampler is None or not isinstance(sampler.value, cst.Name):
        return False
    name = sampler.value.value
    if name not in {n.value for n in source.within(flag, cst.Name)}:
        return False
    return _always_samplers(source, training, sampler.value, call)


_PASSED_THROUGH = frozenset({"enumerate", "iter", "tqdm"})


def _only_inspected(source, training, call: cst.Call) -> bool:
    """True for a loader bound to a name that only loops running no training step read, where the
    file trains elsewhere (MedSAM's top-level sanity check, plotting one batch of its own loader
    before the training function builds the real one): its order reaches no update."""
    if not training.training_loops:
        return False
    assign = source.enclosing(call, cst.Assign)
    if assign is None or assign.value is not call or len(assign.targets) != 1:
        return False
    target = assign.targets[0].target
    if not isinstance(target, cst.Name):
        return False
    uses = [n for n in source.nodes(cst.Name) if n.value == target.value and n is not target]
    if not uses:
        return False
    for use in uses:
        node: cst.CSTNode = use
        parent = source.parent(node)
        while isinstance(parent, cst.Arg) and callee_name(source.parent(parent)) in _PASSED_THROUGH:
            node = source.parent(parent)
            parent = source.parent(node)
        if not isinstance(parent, cst.For) or parent.iter is not node or parent in training.training_loops:
            return False
        inside = {id(c) for c in source.within(parent, cst.Call)}
        if any(id(b.call) in inside for b in training.backwards):
            return False
    return True
