# SPDX-License-Identifier: BSD-2-Clause
# Type stubs of embtables.torch (TorchRec's EmbeddingBagCollection over the library).
import enum
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

import embtables

class PoolingType(enum.Enum):
    SUM: str
    MEAN: str
    SQRTN: str

class DataType(enum.Enum):
    FP32: str
    FP16: str
    BF16: str
    INT8: str
    INT4: str

class EmbeddingBagConfig:
    num_embeddings: int
    embedding_dim: int
    name: str
    data_type: DataType
    feature_names: List[str]
    weight_init_max: Optional[float]
    weight_init_min: Optional[float]
    num_embeddings_post_pruning: Optional[int]
    init_fn: Optional[Callable[[torch.Tensor], Any]]
    need_pos: bool
    pooling: PoolingType
    dtype: Optional[Union[torch.dtype, str]]
    def __init__(self, num_embeddings: int, embedding_dim: int, name: str = ...,
                 data_type: DataType = ..., feature_names: List[str] = ...,
                 weight_init_max: Optional[float] = ..., weight_init_min: Optional[float] = ...,
                 num_embeddings_post_pruning: Optional[int] = ...,
                 init_fn: Optional[Callable[[torch.Tensor], Any]] = ..., need_pos: bool = ...,
                 pooling: Union[PoolingType, str] = ...,
                 dtype: Optional[Union[torch.dtype, str]] = ...) -> None: ...

class KeyedJaggedTensor:
    def __init__(self, keys: Sequence[str], values: torch.Tensor,
                 weights: Optional[torch.Tensor] = ..., lengths: Optional[torch.Tensor] = ...,
                 offsets: Optional[torch.Tensor] = ..., stride: Optional[int] = ...) -> None: ...
    @classmethod
    def from_lengths_sync(cls, keys: Sequence[str], values: torch.Tensor,
                          lengths: torch.Tensor, weights: Optional[torch.Tensor] = ...,
                          stride: Optional[int] = ...) -> "KeyedJaggedTensor": ...
    @classmethod
    def from_offsets_sync(cls, keys: Sequence[str], values: torch.Tensor,
                          offsets: torch.Tensor, weights: Optional[torch.Tensor] = ...,
                          stride: Optional[int] = ...) -> "KeyedJaggedTensor": ...
    def keys(self) -> List[str]: ...
    def values(self) -> torch.Tensor: ...
    def weights(self) -> torch.Tensor: ...
    def weights_or_none(self) -> Optional[torch.Tensor]: ...
    def lengths(self) -> torch.Tensor: ...
    def offsets(self) -> torch.Tensor: ...
    def stride(self) -> int: ...
    def to_dict(self) -> Dict[str, Tuple[torch.Tensor, torch.Tensor]]: ...

class KeyedTensor:
    def __init__(self, keys: Sequence[str], length_per_key: Sequence[int],
                 values: torch.Tensor, key_dim: int = ...) -> None: ...
    def keys(self) -> List[str]: ...
    def values(self) -> torch.Tensor: ...
    def length_per_key(self) -> List[int]: ...
    def offset_per_key(self) -> List[int]: ...
    def key_dim(self) -> int: ...
    def to_dict(self) -> Dict[str, torch.Tensor]: ...
    def __getitem__(self, key: str) -> torch.Tensor: ...

class EmbeddingBagCollection(torch.nn.Module):
    embedding_bags: torch.nn.ModuleDict
    optimizer: Optional[embtables.Optimizer]
    tables: List[embtables.Table]
    dims: List[int]
    poolings: List[Tuple[int, float, int, int]]
    is_weighted: bool
    def __init__(self, tables: Sequence[Any], optimizer: Union[str, embtables.Optimizer, None] = ...,
                 lr: float = ..., strategy: Union[str, embtables.Strategy] = ...,
                 threads: int = ..., mode: Union[str, Sequence[str]] = ...,
                 max_norm: Optional[float] = ..., include_last_offset: bool = ...,
                 prune_invalid: bool = ..., prune_nonpositive_weights: bool = ...,
                 default_id: Optional[int] = ..., dtype: Union[torch.dtype, str] = ...,
                 is_weighted: bool = ..., device: Optional[Union[str, torch.device]] = ...,
                 **hyper: Any) -> None: ...
    @property
    def weights(self) -> List[torch.Tensor]: ...
    def embedding_bag_configs(self) -> List[Any]: ...
    lr: Optional[float]
    def optimizer_state(self, i: Union[int, str], slot: int = ...) -> Tuple[Optional[torch.Tensor], int]: ...
    def saver(self, directory: Any, names: Optional[Sequence[str]] = ..., **kw: Any) -> embtables.Saver: ...
    def restore(self, path: Any, names: Optional[Sequence[str]] = ...) -> int: ...
    def forward(self, features: Any, offsets: Any = ..., per_sample_weights: Any = ...,
                lengths: Optional[torch.Tensor] = ...) -> Union[KeyedTensor, torch.Tensor]: ...
